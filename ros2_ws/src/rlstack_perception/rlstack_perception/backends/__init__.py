"""Optional heavy backends (SAM, CLIP), imported lazily: nothing here is imported by default."""
