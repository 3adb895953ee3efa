"""Task data: embedded corpora, Hub and local sources, tag maps, the task registry, tokenise + align.

>>> # from headprune_core.data import load_task, tokenize_token_task
>>> # data = load_task("pos", "de"); tok, stats = tokenize_token_task(data.dataset, tokenizer)
"""

from headprune_core.data.align import AlignStats, tokenize_sentence_task, tokenize_token_task
from headprune_core.data.corpora import PrepareReport, prepare_corpora
from headprune_core.data.formats import CorpusError
from headprune_core.data.loading import NotPrepared, TaskData
from headprune_core.data.refs import load_task
from headprune_core.data.registry import TASKS, TaskInfo, UnknownName, get_task, list_tasks
from headprune_core.data.tagsets import NAME_TAGS, UNIVERSAL_TAGS

__all__ = ["AlignStats", "CorpusError", "NAME_TAGS", "NotPrepared", "PrepareReport", "TASKS", "TaskData", "TaskInfo",
           "UNIVERSAL_TAGS", "UnknownName", "get_task", "list_tasks", "load_task", "prepare_corpora",
           "tokenize_sentence_task", "tokenize_token_task"]
