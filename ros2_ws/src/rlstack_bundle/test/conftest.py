import os
import sys

# `colcon test` runs from the build dir; make the source package importable in-place too.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
