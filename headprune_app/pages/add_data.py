"""Add data: upload your own corpus (or name a Hub data set), preview it as headprune reads it, register it,
and see its head-importance map."""

import pandas as pd
import streamlit as st

from headprune_app import add_data_view as V
from headprune_app import cached, charts
from headprune_app import selection as S
from headprune_core.data.formats import FORMATS
from headprune_core.runs.config import FinetuneConfig

sel: S.Selection = cached.selection()

st.title("Add data")
st.markdown("Bring your own corpus: tagged words (CoNLL `word<TAB>tag`, CoNLL-U, JSONL, parquet) or labelled "
            "sentences (CSV `label,text`, JSONL). **One file** is split 80/10/10 with a fixed seed; **three files** "
            "are train, validation and test. Every line is checked, the data is converted once into the cache, "
            "and from then on it is a task like the embedded ones: pick it in the sidebar on every page. A bad "
            "file is refused with the line that is wrong; nothing already registered is touched.")
st.caption(f"{cached.model_caption(sel.model)} (its tokenizer is used for the alignment statistics and the "
           "heatmap below)")

upload_tab, hub_tab, mine_tab = st.tabs(["Upload files", "From the Hugging Face Hub", "Registered corpora"])

with upload_tab:
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
                                help="WORDS,TAGS or TEXT,LABEL of a parquet / JSONL / CSV table whose columns "
                                     "are not tokens/tags or text/label")
    tagset = e.selectbox("Map POS tags to the 12 universal tags", ["no", "penn", "stts", "parole", "wotan", "upos"],
                         key="add_tagset")
    if not uploads:
        st.info("Upload one file (split 80/10/10) or three (train, validation, test).")
    elif len(uploads) not in (1, 3):
        st.error(f"{len(uploads)} files: upload one file (split 80/10/10) or three (train, validation, test).")
    else:
        kept = {u.name: V.keep_upload(u.name, u.getvalue()) for u in uploads}
        order = [u.name for u in uploads]
        if len(order) == 3:
            guess = V.guess_splits(order)
            cols = st.columns(3)
            chosen = [col.selectbox(split, order, index=order.index(guess[split]), key=f"split:{split}")
                      for col, split in zip(cols, guess)]
            if len(set(chosen)) != 3:
                st.error("Give each split its own file.")
                st.stop()
            order = chosen
        paths = tuple(str(kept[n]) for n in order)
        columns = tuple(x.strip() for x in columns_text.split(",") if x.strip())
        opts = dict(fmt=None if fmt == "from the suffix" else fmt, columns=columns,
                    tagset=None if tagset == "no" else tagset)
        try:
            rep = V.preview(paths, name or "upload", lang or "xx", opts["fmt"], columns, opts["tagset"], sel.model,
                            sel.plan.train.get("max_length", FinetuneConfig.max_length))
        except cached.problems() as err:
            st.error(f"This file cannot be used as it is: {V.message(err, kept)}")
            st.stop()
        st.subheader("Preview")
        m1, m2, m3, m4 = st.columns(4)
        m1.metric("Kind", f"{rep['kind']} task")
        m2.metric("Sentences", " / ".join(str(v) for v in rep["counts"].values()), help="train / validation / test")
        m3.metric("Labels", len(rep["labels"]))
        if "alignment" in rep:
            al = rep["alignment"]
            m4.metric("Words lost to truncation", f"{al['words_lost']} ({100 * al['words_lost_share']:.2f}%)",
                      help=f"{al['truncated']} of {al['sentences']} sentences are longer than {al['max_length']} "
                           f"tokens; {al['pieces_per_word']:.2f} sub-word pieces per word")
            st.caption(f"Tokenizer of `{sel.model}`: {al['truncated']} of {al['sentences']} sentences truncated at "
                       f"{al['max_length']} tokens, {al['words_lost']} of {al['words']} words lost, "
                       f"{al['pieces_per_word']:.2f} pieces per word.")
        left, right = st.columns([3, 2])
        with left:
            st.markdown("**First sentences (train)**")
            for i, ex in enumerate(rep["first"]):
                if rep["kind"] == "token":
                    st.dataframe(pd.DataFrame([ex["tags"]], columns=[f"{j}:{w}" for j, w in enumerate(ex["words"])],
                                              index=["tag"]), key=f"ex{i}")
                else:
                    st.markdown(f"- `{ex['label']}` {ex['text']}")
        with right:
            st.markdown("**Label set (train counts)**")
            st.dataframe(pd.DataFrame({"label": list(rep["label_counts"]),
                                       "count": list(rep["label_counts"].values())}), hide_index=True)
        replace = st.checkbox("Replace a corpus registered under the same name and language", key="add_replace")
        if st.button("Register", type="primary", key="register", disabled=not (name and lang)):
            try:
                meta = V.register_files(paths, name, lang, replace=replace, originals=order, **opts)
            except cached.problems() as err:
                st.error(V.message(err, kept))
            else:
                st.session_state["registered"] = (name, lang)
                st.success(f"Registered {name}/{lang}: {meta['counts']['train']} / {meta['counts']['validation']} "
                           f"/ {meta['counts']['test']} sentences, fingerprint {meta['fingerprint']}. Pick "
                           f"'{name}' as the task in the sidebar to use it on every page.")
        if not (name and lang):
            st.caption("Give a task name and a language code to register it.")

with hub_tab:
    st.markdown("Name a data set on the Hugging Face Hub (needs network): `wikiann:sw`, `universal_dependencies:"
                "sw_kiswahili`, `glue:rte`, `xnli:fr`, `paws-x:de`, or any data set with word/tag or text/label "
                "columns, e.g. `someone/my-tagged-data`. It is downloaded and converted once, then works offline.")
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
    task, lang = done
    st.subheader(f"Head importance on {task}/{lang}")
    study = cached.study(sel.model, finetuned=sel.finetuned)
    ft = cached.guarded(study.finetune_config, task, (lang,), **sel.plan.train, what="Cannot use this corpus")
    sc = study.score_config(ft, task, lang, method=sel.method, max_sentences=sel.plan.score_sentences)
    st.caption(f"Fine-tuned on {task}/{lang} train with the plan's settings ({sel.plan.train}), scored "
               f"({sel.method}) on at most {sel.plan.score_sentences} validation sentences: the same result the "
               "Head importance page shows when you pick this task.")
    if cached.offer_compute(study, [(f"head scores {task}/{lang} ({sel.method})", sc)], key=f"own:{task}:{lang}",
                            note="fine-tuning and scoring take a minute or more on a CPU"):
        found = cached.read(study, sc)
        from headprune_core.methods.importance import normalise
        shown = normalise(found["raw"], normalize=sel.normalize, minmax=sel.minmax)
        st.plotly_chart(charts.importance_heatmap(shown), key="own_map",
                        config=charts.png_config(f"importance_{task}_{lang}"))
