"""Defaults shared by the library, the CLI and the app, each stated once.

>>> MAX_LENGTH
128
"""

DEFAULT_MODEL = "me5-small"
"""The embedded default: multilingual-e5-small (4-bit quantised), prepared from registry packages."""

MAX_LENGTH = 128
"""Tokens per sentence; longer sentences are cut (the published protocols use 128)."""

DEMO_TRAIN = {"max_train_sentences": 300, "epochs": 2.0, "batch_size": 8, "lr": 2e-4, "head_lr": 5e-3}
"""How the demo preset and the CLI fine-tune by default: 300 sentences x 2 epochs at a raised rate (about 70 s a
task on 2 cores; all 801 English POS sentences at lr 5e-5 took about 185 s); the classifiers at 5e-3 (at 1e-3
NAME reached English F1 32 in these 76 steps, at 5e-3 93)."""

TRAIN_SEED = 13
"""The fine-tuning seed when none is given."""

CLASS_ENV = "HEADPRUNE_CLASS"
"""Environment: 1 starts the dashboard in class mode (``headprune serve --class`` sets it)."""

TEACHER_KEY_ENV = "HEADPRUNE_TEACHER_KEY"
"""Environment: the teacher's key in class mode (or ``teacher_key`` in Streamlit's secrets)."""

UNLOCK_ENV = "HEADPRUNE_UNLOCK_TOKEN"
"""Environment: the one-time unlock link's token (``headprune serve --class`` makes one and prints the link)."""

CLASS_UPLOAD_ENV = "HEADPRUNE_CLASS_UPLOAD_MB"
"""Environment: the largest upload (MB) a class-mode server takes (``headprune serve --class --uploads MB``)."""

CLASS_UPLOAD_MB = 1
"""A class-mode server's upload limit unless the teacher opts in: students get no uploader, and Streamlit's upload
endpoint answers any client, so each file it takes is held in the server's memory."""

CLASS_STREAMLIT = {"server.headless": "true", "client.toolbarMode": "viewer", "client.showErrorDetails": "none",
                   "server.fileWatcherType": "none", "server.runOnSave": "false"}
"""Streamlit's settings for a class (beside ``server.maxUploadSize``): no browser opened on the server, the viewer's
menu, no tracebacks in a student's browser (they stay in the server's log), no reload when a server file changes.
``headprune serve --class`` applies them; the app refuses class mode without them."""

STUDENT_CAP_ENV = "HEADPRUNE_STUDENT_CAP_S"
"""Environment: how long one student computation may hold a place in the compute queue (seconds)."""
