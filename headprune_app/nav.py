"""The dashboard's pages, in one table: ``app.py`` builds its navigation from it, and it is what the app hands
the core where the core reads a page's name (a lesson step's ``view: PAGE?CHOICES``, a Findings card's page).
The core keeps no list of the app's pages."""

from __future__ import annotations

from typing import NamedTuple


class Page(NamedTuple):
    name: str  # the URL path and the name a lesson step's view uses
    title: str
    icon: str

    @property
    def file(self) -> str:
        return f"headprune_app/pages/{self.name}.py"


PAGES = (
    Page("home", "Overview", ":material/home:"),
    Page("importance", "Head importance", ":material/grid_on:"),
    Page("prune", "Prune & evaluate", ":material/content_cut:"),
    Page("retrain", "Prune & retrain", ":material/model_training:"),
    Page("inspector", "Head inspector", ":material/search:"),
    Page("task_affinity", "Task affinity", ":material/hub:"),
    Page("shared_heads", "Shared heads", ":material/join_inner:"),
    Page("findings", "Findings", ":material/fact_check:"),
    Page("runs", "Runs", ":material/storage:"),
    Page("add_data", "Add data", ":material/upload_file:"),
    Page("lessons", "Lessons", ":material/school:"),
)
BY_NAME = {p.name: p for p in PAGES}
NAMES = tuple(BY_NAME)
