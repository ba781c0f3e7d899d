"""digest"""
