"""Slot filling on MASSIVE (FitzGerald et al. 2022, ``AmazonScience/massive``), the open set that stands in for
Ma et al. 2021's MultiATIS++ (not on the Hub): its ``annot_utt`` column read as words with BIO slot tags.

MASSIVE's ``main`` branch is a loading script, so the rows are read from the Hub's parquet export, one folder per
locale (``en-US/train/0000.parquet``). A row's ``annot_utt`` marks each slot as ``[type : words]``::

    wake me up at [time : five am] [date : this week]

becomes the words ``wake me up at five am this week`` tagged ``O O O O B-time I-time B-date I-date``. Words are
split at white space as Amazon's own converter does (``utt.split()``); in Japanese and Chinese, which MASSIVE writes
without spaces, every character is a word and a run of ASCII letters or digits stays one (Amazon's converter splits
them the same way). Amazon's evaluation merges adjacent spans of one type into one; here each bracket is its own
span, as the annotators marked it. Every locale shares the 55 slot types of :data:`SLOT_TYPES`, so one label list
serves every language (zero-shot transfer needs it); a type outside it fails, naming the row.

>>> words_and_tags("wake me up at [time : five am] [date : this week]", "en-US")
(['wake', 'me', 'up', 'at', 'five', 'am', 'this', 'week'], ['O', 'O', 'O', 'O', 'B-time', 'I-time', 'B-date', 'I-date'])
>>> words_and_tags("[date : 明日] の天気", "ja-JP")[0]
['明', '日', 'の', '天', '気']
"""

from __future__ import annotations

import re

MASSIVE = "AmazonScience/massive"
LOCALES = {"en": "en-US", "es": "es-ES", "de": "de-DE", "zh": "zh-CN", "ja": "ja-JP", "pt": "pt-PT", "fr": "fr-FR",
           "hi": "hi-IN", "tr": "tr-TR"}
"""MASSIVE's locale for each of Ma et al.'s nine slot-filling languages (MultiATIS++'s); another locale of MASSIVE's
52 (MASSIVE 1.1) is read by naming it as the config (``hub:massive:zh-TW``)."""
NO_SPACES = ("ja-", "zh-")
"""Locales written without spaces between words: split into characters, ASCII runs kept whole."""
SLOT_TYPES = (
    "alarm_type", "app_name", "artist_name", "audiobook_author", "audiobook_name", "business_name", "business_type",
    "change_amount", "coffee_type", "color_type", "cooking_type", "currency_name", "date", "definition_word",
    "device_type", "drink_type", "email_address", "email_folder", "event_name", "food_type", "game_name", "game_type",
    "general_frequency", "house_place", "ingredient", "joke_type", "list_name", "meal_type", "media_type",
    "movie_name", "movie_type", "music_album", "music_descriptor", "music_genre", "news_topic", "order_type", "person",
    "personal_info", "place_name", "player_setting", "playlist_name", "podcast_descriptor", "podcast_name",
    "radio_name", "relation", "song_name", "sport_type", "time", "time_zone", "timeofday", "transport_agency",
    "transport_descriptor", "transport_name", "transport_type", "weather_descriptor")
"""MASSIVE's 55 slot types, as its ``annot_utt`` names them (the card: "Utterances span 60 intents and include 55 slot
types"). A name outside this list fails loudly, naming its row, so a wrong or missing name cannot pass silently."""
SLOT_TAGS: tuple[str, ...] = ("O", *(f"{p}-{t}" for t in SLOT_TYPES for p in ("B", "I")))
"""The BIO labels of every locale: O, then B- and I- of each slot type."""

_SPAN = re.compile(r"\[\s*([^\[\]:]+?)\s*:\s*([^\[\]]*?)\s*\]")
_ASCII_RUN = re.compile(r"[A-Za-z0-9]+|\S")


class BadAnnotation(ValueError):
    """An ``annot_utt`` that is not MASSIVE's markup, or names a slot type outside :data:`SLOT_TYPES`."""


def locale_of(lang: str) -> str:
    """MASSIVE's locale for a language code (``en`` -> ``en-US``); a locale (``zh-TW``) is returned as it is."""
    return lang if "-" in lang else LOCALES.get(lang, lang)


def split_words(text: str, locale: str) -> list[str]:
    """``text`` as words: white space, or characters (ASCII runs whole) in a locale written without spaces."""
    if locale.startswith(NO_SPACES):
        return _ASCII_RUN.findall(text)
    return text.split()


def words_and_tags(annot: str, locale: str) -> tuple[list[str], list[str]]:
    """One ``annot_utt`` as words and BIO tags (:class:`BadAnnotation` on markup it cannot read)."""
    words: list[str] = []
    tags: list[str] = []
    at = 0
    for span in _SPAN.finditer(annot):
        _plain(annot[at:span.start()], locale, words, tags, annot)
        slot, inside = span.group(1).strip(), split_words(span.group(2), locale)
        if slot not in SLOT_TYPES:
            raise BadAnnotation(f"unknown slot type {slot!r} in {annot!r} (MASSIVE's 55 types: "
                                f"{', '.join(SLOT_TYPES)})")
        if not inside:
            raise BadAnnotation(f"an empty slot [{slot} : ] in {annot!r}")
        words += inside
        tags += [f"B-{slot}"] + [f"I-{slot}"] * (len(inside) - 1)
        at = span.end()
    _plain(annot[at:], locale, words, tags, annot)
    return words, tags


def _plain(text: str, locale: str, words: list[str], tags: list[str], annot: str) -> None:
    if "[" in text or "]" in text:
        raise BadAnnotation(f"a bracket outside MASSIVE's [type : words] markup in {annot!r}")
    plain = split_words(text, locale)
    words += plain
    tags += ["O"] * len(plain)


def convert_batch(batch: dict, locale: str, split: str) -> dict:
    """A batch of MASSIVE rows (``id``, ``annot_utt``) as ``tokens`` and tag indices of :data:`SLOT_TAGS`; a bad row
    raises naming its split and id."""
    index = {t: i for i, t in enumerate(SLOT_TAGS)}
    toks, tags = [], []
    for row_id, annot in zip(batch.get("id") or [None] * len(batch["annot_utt"]), batch["annot_utt"]):
        try:
            words, bio = words_and_tags(annot or "", locale)
        except BadAnnotation as err:
            raise BadAnnotation(f"{MASSIVE} ({locale}) {split} row id {row_id}: {err}") from None
        toks.append(words)
        tags.append([index[t] for t in bio])
    return {"tokens": toks, "tags": tags}
