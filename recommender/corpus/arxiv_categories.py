"""arXiv's categories (https://arxiv.org/category_taxonomy) and the OAI-PMH set of each.

A category name people write (``cs.LG``, ``hep-th``, ``astro-ph.CO``) or a group (``cs``,
``physics``) becomes the OAI set that arXiv serves it as (``cs:cs:LG``, ``physics:hep-th``,
``physics:astro-ph:CO``, ``cs``). Only names in arXiv's taxonomy are accepted: a mistyped
``cs.XX`` would harvest nothing and look like a quiet day. Kept apart from the harvest so that
the command line checks a name without importing an HTTP client.
"""

from __future__ import annotations

import difflib

from recommender.core.errors import InvalidInput

# Groups whose sets are named group:archive:subject; physics' archives are sets of their own.
GROUPS = ("cs", "econ", "eess", "math", "physics", "q-bio", "q-fin", "stat")
_SUBJECTS = {
    "cs": "AI AR CC CE CG CL CR CV CY DB DC DL DM DS ET FL GL GR GT HC IR IT LG LO MA MM MS NA "
          "NE NI OH OS PF PL RO SC SD SE SI SY",
    "econ": "EM GN TH",
    "eess": "AS IV SP SY",
    "math": "AC AG AP AT CA CO CT CV DG DS FA GM GN GR GT HO IT KT LO MG MP NA NT OA OC PR QA "
            "RA RT SG SP ST",
    "q-bio": "BM CB GN MN NC OT PE QM SC TO",
    "q-fin": "CP EC GN MF PM PR RM ST TR",
    "stat": "AP CO ME ML OT TH",
    # The physics archives; an empty string: the archive has no subject classes.
    "astro-ph": "CO EP GA HE IM SR",
    "cond-mat": "dis-nn mes-hall mtrl-sci other quant-gas soft stat-mech str-el supr-con",
    "gr-qc": "", "hep-ex": "", "hep-lat": "", "hep-ph": "", "hep-th": "", "math-ph": "",
    "nlin": "AO CD CG PS SI",
    "nucl-ex": "", "nucl-th": "",
    "physics": "acc-ph ao-ph app-ph atm-clus atom-ph bio-ph chem-ph class-ph comp-ph data-an "
               "ed-ph flu-dyn gen-ph geo-ph hist-ph ins-det med-ph optics plasm-ph pop-ph "
               "soc-ph space-ph",
    "quant-ph": "",
}
PHYSICS_ARCHIVES = tuple(name for name in _SUBJECTS if name not in GROUPS or name == "physics")
CATEGORIES = frozenset(
    [*GROUPS, *PHYSICS_ARCHIVES]
    + [f"{archive}.{subject}" for archive, subjects in _SUBJECTS.items()
       for subject in subjects.split()])


def set_for_category(category: str) -> str:
    """The OAI set of an arXiv category, archive or group; InvalidInput if it is none."""
    name = category.strip()
    if name not in CATEGORIES:
        by_lower = {known.lower(): known for known in CATEGORIES}
        close = [by_lower[found] for found in
                 difflib.get_close_matches(name.lower(), by_lower, n=3, cutoff=0.6)]
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise InvalidInput(
            f"unknown arXiv category {category!r}{hint}: write a category of arXiv's taxonomy "
            f"such as cs.LG, stat.ML, hep-th or astro-ph.CO, or a group "
            f"({', '.join(GROUPS)})")
    archive, _, subject = name.partition(".")
    if archive == "physics":
        return f"physics:physics:{subject}" if subject else "physics"
    if archive in PHYSICS_ARCHIVES:
        return f"physics:{archive}" + (f":{subject}" if subject else "")
    return f"{archive}:{archive}:{subject}" if subject else archive


# What people call the categories most papers here carry (arXiv's taxonomy page); a category
# not named here is shown by its code.
NAMES = {
    "cs.AI": "Artificial Intelligence", "cs.AR": "Hardware Architecture",
    "cs.CC": "Computational Complexity", "cs.CE": "Computational Engineering",
    "cs.CG": "Computational Geometry", "cs.CL": "Computation and Language",
    "cs.CR": "Cryptography and Security", "cs.CV": "Computer Vision",
    "cs.CY": "Computers and Society", "cs.DB": "Databases",
    "cs.DC": "Distributed Computing", "cs.DL": "Digital Libraries",
    "cs.DM": "Discrete Mathematics", "cs.DS": "Data Structures and Algorithms",
    "cs.ET": "Emerging Technologies", "cs.FL": "Formal Languages",
    "cs.GL": "General Literature", "cs.GR": "Graphics",
    "cs.GT": "Computer Science and Game Theory", "cs.HC": "Human-Computer Interaction",
    "cs.IR": "Information Retrieval", "cs.IT": "Information Theory",
    "cs.LG": "Machine Learning", "cs.LO": "Logic in Computer Science",
    "cs.MA": "Multiagent Systems", "cs.MM": "Multimedia", "cs.MS": "Mathematical Software",
    "cs.NA": "Numerical Analysis", "cs.NE": "Neural and Evolutionary Computing",
    "cs.NI": "Networking and Internet Architecture", "cs.OS": "Operating Systems",
    "cs.PF": "Performance", "cs.PL": "Programming Languages", "cs.RO": "Robotics",
    "cs.SC": "Symbolic Computation", "cs.SD": "Sound", "cs.SE": "Software Engineering",
    "cs.SI": "Social and Information Networks", "cs.SY": "Systems and Control",
    "stat.AP": "Statistics Applications", "stat.CO": "Statistical Computation",
    "stat.ME": "Statistical Methodology", "stat.ML": "Machine Learning (Statistics)",
    "stat.TH": "Statistics Theory", "eess.AS": "Audio and Speech Processing",
    "eess.IV": "Image and Video Processing", "eess.SP": "Signal Processing",
    "eess.SY": "Systems and Control", "math.OC": "Optimization and Control",
    "math.PR": "Probability", "math.ST": "Statistics Theory", "math.NA": "Numerical Analysis",
    "q-bio.NC": "Neurons and Cognition", "q-bio.QM": "Quantitative Methods",
    "quant-ph": "Quantum Physics", "hep-th": "High Energy Physics - Theory",
    "cond-mat.stat-mech": "Statistical Mechanics",
    "physics.comp-ph": "Computational Physics", "astro-ph.CO": "Cosmology",
}


def category_name(category: str) -> str:
    """"Machine Learning (cs.LG)" for cs.LG; a category without a name here: its code."""
    name = NAMES.get(category.strip())
    return f"{name} ({category.strip()})" if name else category.strip()
