"""The long descriptions of the commands that need more than a line (`paperrec X --help`)."""

EVALUATE_HELP = """Offline evaluation on a dataset of papers and held-out likes.

Protocol: for each user with test papers, every paper not in the user's training set is
ranked; Recall@M = the user's test papers in the top M / the user's test papers (M = 20, 50,
100, 300); nDCG@20 with binary relevance, ideal DCG over min(20, #test) positions. Both are
averaged over the users with test papers. Training papers are never ranked, so never hits.
Content is title + abstract; other fields are ignored. Users missing from TRAIN have no likes.
Seconds per method are wall clock, fitting included (embedding the papers, shared by content
and hybrid and cached by content hash, is timed separately).

methods:
  popular     training likes per paper, the same list for every user
  content     mean cosine of the paper embeddings to the liked papers (zotero-arxiv-daily)
  content-max the same with the best cosine instead of the mean
  content-centred
              the strongest simple baseline: the same mean cosine over centred embeddings
              (the corpus mean subtracted, renormalised); no CF, popularity or neighbours
  content-augmented
              the same over the service's content space: centred vectors blended with
              their neighbours (the hybrid's content without its Fisher term); no CF or
              popularity
  cf          collaborative filtering alone (CollaborativeModel)
  tfidf-svm   arxiv-sanity: TF-IDF and a linear SVM per user (sampled negatives)
  hybrid      the production ranking (what the service serves)
  hybrid-interests
              hybrid for readers of several topics: their likes clustered (k-means, k by
              the silhouette), each cluster ranked against the whole profile, interleaved
  content-whitened
              kept to compare: mean cosine over centred, shrunk-ZCA-whitened embeddings
              (the best content-only top of the list on citeulike-a P10)
  colike-projection
              kept to compare: centred mean cosine plus mean cosine in a space learned
              from co-likes (papers liked by the same reader); needs readers with several
              likes

hybrid's report also has "calibration": the probability of its top-20 items (Platt scaling
of the score, ranking/calibration.py) fitted on the held-out likes of one half of the users
and measured on the other half, then the other way round: "ece" is the expected calibration
error over 10 bins; "thresholds" says, for min_probability values, the share of the items
kept and how many of those were liked; "fitted" is the fit on all users.

hybrid ranks through the service's own ranking context, over an index version built as
`paperrec rebuild-index` builds one (in a temporary directory). --index picks its kind: auto
(exact up to PAPERREC_EXACT_INDEX_MAX papers, 20,000 by default, HNSW above, as the service
chooses), exact (every paper is scored), or hnsw (each list takes the cheaper of scoring
every paper and scoring the candidates the HNSW index finds, as lists over a large corpus
do: measurable on a small dataset). The report
says which kind was used ("index" in "dataset").

--new-papers FRACTION: the new-papers protocol. That fraction of the papers, chosen at
random from --seed, becomes new: every training like of theirs moves to the test set (they
stay in the corpus: their content is known, nobody has liked them). The usual figures are
reported on this split, and also the ranking of the new papers among themselves, as a digest
ranks its candidates: for each user with a new paper in test, only the new papers are
ranked; Recall@10, Recall@20, nDCG@10, nDCG@20 over the user's new test papers ("new_papers"
in the JSON, beside "methods"; "new_papers_fraction" in "dataset").

--onboarding N,N: simulated new readers (a sample of 1,000 users with test papers, drawn by
--seed) answer N questions each, one at a time: a paper is liked if it is in the user's
training library, otherwise "not for me" (a dislike). Their first list is ranked from those
answers by hybrid's ranking and scored on their test papers (nDCG@20, Recall@20; training
papers never ranked). The questions are the welcome page's ("adaptive": topic
representatives, then the papers the model is least sure about), or N random papers, or the
N most liked ones ("onboarding" in the JSON, beside "methods").
"""


FETCH_ARXIV_HELP = """Harvest paper metadata from arXiv's OAI-PMH interface into the corpus.

Each --category is harvested as its OAI set (cs.LG -> cs:cs:LG, hep-th -> physics:hep-th,
cs -> the whole group), in metadata format arXiv. The first run harvests everything in the
set (or from --from); every later run continues from the newest datestamp the last one
stored, so a daily run fetches only new and updated papers. A harvest that stops half-way
(network down, the server failing after PAPERREC_ARXIV_RETRIES retries) keeps what it stored
and its resumption token: run the same command again and it continues from there.

Ids are the arXiv id without its version (2401.01234): a new version updates the paper
(re-embedded by the next rebuild-index). A withdrawn paper (a deleted record, or "This paper
has been withdrawn" in its comments or abstract) is marked in the corpus and left out of the
next rebuild-index; until then the current index can still recommend it. Records that cannot
be read (no title, ...) are reported as "identifier: reason" and skipped.

Requests are PAPERREC_ARXIV_DELAY_SECONDS apart (3 s, as arXiv asks); a 503 with Retry-After
waits that long (at most 10 minutes); network errors and other 5xx back off exponentially
(5 s, 10 s, 20 s, ...). The endpoint is PAPERREC_ARXIV_OAI_URL. Ends with: fetched, added,
updated, unchanged, withdrawn, rejected. Exit status 1 when the harvest stopped early.
"""


FETCH_OPENREVIEW_HELP = """Fetch a conference's accepted papers from OpenReview into the corpus.

Each --venue is an OpenReview venue id, as in the venue's address
(https://openreview.net/group?id=ICML.cc/2026/Conference). Its accepted papers are the notes
whose venueid is exactly that id (rejected and withdrawn submissions carry
<venue>/Rejected_Submission, <venue>/Withdrawn_Submission and are never stored), read from
OpenReview's API v2 (PAPERREC_OPENREVIEW_URL) a thousand a request.

Ids are openreview:<forum id>, the url the forum page, the date the publication date, the
venue string ("ICML 2026 Poster") the paper's category. A paper the corpus holds already
(an arXiv preprint with the same arXiv id, DOI, or title and first author) is stored once,
merged: it keeps its id and is found by the openreview: id too. A re-run fetches the list
again and changes nothing unless OpenReview did (a note modified since is stored again);
a fetch that stops half-way keeps what it stored and continues from there when run again.
Notes that cannot be read (no title, ...) are reported as "openreview:<id>: reason" and
skipped. A venue with no accepted papers (a mistyped id, or decisions not public yet) stops
with a message.

Requests are PAPERREC_OPENREVIEW_DELAY_SECONDS apart; a 429 (rate limited) or 503 waits as
its Retry-After says (at most 10 minutes), else backs off exponentially (5 s, 10 s, ...), as
do network errors and other 5xx, PAPERREC_OPENREVIEW_RETRIES times. Ends with: fetched,
added, updated, unchanged, merged, rejected. Exit status 1 when the fetch stopped early or a
venue has nothing accepted.
"""

SIMULATE_HELP = """Replay a dataset's readers day by day against a real deployment of its papers.

The papers are embedded with the configured model (through the embedding cache, so once),
indexed and put in a temporary data directory; every reader's training likes are recorded in
a Redis namespace of the simulation's own (REDIS_URL, else an embedded server), erased at
the end, and the collaborative model is trained. Each simulated day, --users readers (drawn
with --seed among those with held-out papers) get a digest of 10 papers from the running
ranking code, logged as served; each served paper in a reader's held-out set is liked unless
the reader does not look (--skip-chance), and the like is recorded and logged, so the next
lists learn from it.

For --days, the digests interleave A (production) and B (team draft): the verdict is the
report's sign test over the lists each side won. Then `paperrec train` refits the
probability shown on the simulation's log (once it holds 100 liked items) and --days more
days of production alone measure it: the ECE of the probability shown against the likes.

A variant is a ranking variant (hybrid, hybrid-diverse, content-augmented,
no-collaborative, popular, or one of PAPERREC_RANKING_VARIANTS) or a method of `paperrec
evaluate` (content-centred, tfidf-svm, cf, ...: fitted on the dataset and ranking over the
index). --variants hybrid,hybrid is the A/A check: it should find no significant
difference in 95% of seeds.

The JSON has "interleaving" {winner: "A" | "B" | null, significant, p_value, impressions},
per variant its side, "likes" and cumulative "likes_by_day", "likes" {A, B}, "calibration"
{source, fitted_on, ece_next_month, ...}, the settings and the seconds taken.

With --service URL, no dataset: --users simulated readers (sim-0001, ...) use that running
service's REST API for --rounds rounds. Each picks a paper of their first list as their
interest and likes it; the papers the service finds closest to it are what they go on to like
when their list shows them (sending its list_id). What they do is that service's: its
impression log, `paperrec report`, /admin/online and the experiment it runs (start one with
`paperrec experiment start` or on the admin page first). --forget erases them.
"""
