"""Add data: upload your own corpus (or name a Hub data set), preview it as headprune reads it, register it,
and see its head-importance map."""

import pandas as pd
import streamlit as st

from headprune_app import add_data_view as V
from headprune_app import cached, captions, figures, panels, roles
from headprune_app.page_end import end_page
from headprune_core.data.formats import FORMATS
from headprune_core.plans import selection as S

sel: S.Selection = cached.selection()

about = figures.heading("Add data")
with about:
    st.markdown(captions.ADD_DATA)
    st.caption(f"{panels.model_caption(sel.model)} (its tokenizer is used for the alignment statistics and the "
               "heatmap below)")

upload_tab, hub_tab, mine_tab = st.tabs(["Upload files", "From the Hugging Face Hub", "Registered corpora"])

with upload_tab:
    if not roles.is_teacher():
        roles.student_note("uploading and registering data")
    else:
        uploads = st.file_uploader(f"Corpus files (1 or 3; at most {V.MAX_UPLOAD_MB} MB each)", type=V.UPLOAD_TYPES,
                                   accept_multiple_files=True, key="uploads")
        a, b, c = st.columns(3)
        name = a.text_input("Task name", key="add_name", placeholder="e.g. swahili-pos",
                            help="Letters, digits, - _ . (it becomes a folder name and a task name)")
        lang = b.text_input("Language code", key="add_lang", placeholder="e.g. sw",
                            help="ISO 639 code such as sw, de or pt-BR")
        fmt = c.selectbox("Format", ["from the suffix", *FORMATS], key="add_format")
        d, e = st.columns(2)
        columns_text = d.text_input("Columns (tables only)", key="add_columns", placeholder="e.g. tokens,ner_tags",
                                    help=captions.COLUMNS_HELP)
        tagset = e.selectbox("Map POS tags to the 12 universal tags", ["no", "penn", "stts", "parole", "wotan", "upos"],
                             key="add_tagset")
        if not uploads:
            st.info("Upload one file (split 80/10/10) or three (train, validation, test).")
        elif len(uploads) not in (1, 3):
            st.error(f"{len(uploads)} files: upload one file (split 80/10/10) or three (train, validation, test).")
        else:
            kept = {u.name: V.keep_upload(u.name, u.getvalue()) for u in uploads}
            order = V.pick_splits([u.name for u in uploads])
            paths = tuple(str(kept[n]) for n in order)
            opts = V.read_options(fmt, columns_text, tagset)
            try:
                rep = V.preview(paths, name or "upload", lang or "xx", opts["fmt"], opts["columns"], opts["tagset"],
                                sel.model, V.max_length(sel))
            except cached.problems() as err:
                st.error(f"This file cannot be used as it is: {V.message(err, kept)}")
                end_page()
            V.preview_panel(rep, sel.model)
            replace = st.checkbox("Replace a corpus registered under the same name and language", key="add_replace")
            if st.button("Register", type="primary", key="register", disabled=not (name and lang)):
                try:
                    meta = V.register_files(paths, name, lang, replace=replace, originals=order, **opts)
                except cached.problems() as err:
                    st.error(V.message(err, kept))
                else:
                    st.session_state["registered"] = (name, lang)
                    st.success(captions.registered_text(name, lang, meta))
            if not (name and lang):
                st.caption("Give a task name and a language code to register it.")

with hub_tab:
    if not roles.is_teacher():
        roles.student_note("registering data")
    else:
        st.markdown(captions.HUB)
        h1, h2, h3 = st.columns([3, 2, 1])
        hub_ref = h1.text_input("Hub data set (NAME[:CONFIG])", key="hub_ref", placeholder="wikiann:sw")
        hub_name = h2.text_input("Task name", key="hub_name", placeholder="e.g. ner-sw")
        hub_lang = h3.text_input("Language", key="hub_lang", placeholder="sw")
        hub_cols = st.text_input("Columns (optional)", key="hub_cols", placeholder="tokens,ner_tags")
        if st.button("Load and register", key="hub_register", disabled=not (hub_ref and hub_name and hub_lang)):
            with st.spinner(f"Loading {hub_ref} ..."):
                try:
                    meta = V.register_hub(hub_ref, hub_name, hub_lang, columns=hub_cols, replace=False)
                except (*cached.problems(), ConnectionError) as err:
                    st.error(V.message(err, {}))
                else:
                    st.session_state["registered"] = (hub_name, hub_lang)
                    st.success(f"Registered {hub_name}/{hub_lang} from {hub_ref}: {meta['counts']}")

with mine_tab:
    rows = V.registered_table()
    if rows:
        st.dataframe(pd.DataFrame(rows), hide_index=True)
        st.caption("Delete one with `python -m headprune_core data rm NAME [--lang xx]`.")
    else:
        st.info("No corpus of your own yet.")

done = st.session_state.get("registered")
if done:
    V.own_importance(sel, *done)
