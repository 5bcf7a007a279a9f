"""The manual's pages, shared by the docs tests (check_examples, check_links, check_options)."""
import glob
import os


def manual_pages(root, reference=False):
    """README.md, CONTRIBUTING.md and the pages under docs/, relative to ROOT.

    `reference` keeps docs/DESIGN.md and docs/RESULTS.md (the contributor's
    design and a record of past runs), which hold no user examples."""
    docs = ["README.md", "CONTRIBUTING.md"]
    for p in sorted(glob.glob(os.path.join(root, "docs", "**", "*.md"), recursive=True)):
        rel = os.path.relpath(p, root)
        if reference or rel not in ("docs/DESIGN.md", "docs/RESULTS.md"):
            docs.append(rel)
    return [d for d in docs if os.path.exists(os.path.join(root, d))]
