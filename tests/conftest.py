import os
import sys

sys.path.insert(0, os.path.dirname(__file__))  # shared test helpers (e.g. derivations/paper_formula.py)

from hypothesis import settings

settings.register_profile("attnverify", deadline=None, derandomize=True, database=None, print_blob=True)
settings.load_profile("attnverify")
