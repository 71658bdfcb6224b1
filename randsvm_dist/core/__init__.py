"""Foundation (layer 0): input checks, random seeds, the progress line. Imports nothing above."""
