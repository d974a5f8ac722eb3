"""The method itself: deferral rules as target laws (`rules`), sampling and the accept tests
(`sampling`), draft-length policies (`drafting`), the records of a run (`trace`), the pair of
models a run uses (`pair`), errors (`errors`), and the one speculative loop with its siblings
(`engine`).

Layer 0: imports nothing else from speccascade. Everything above may import it."""
