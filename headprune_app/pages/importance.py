"""Head importance: layer x head maps per language, their similarity, per-layer profile, top heads."""

import streamlit as st

from headprune_app import cached, captions, figures, panels, tables
from headprune_app.page_end import end_page
from headprune_core.base.files import safe_filename
from headprune_core.figures.heads import importance_heatmap, layer_profile, small_multiples, spearman_heatmap
from headprune_core.plans import selection as S

sel: S.Selection = cached.selection()
study = cached.study_for(sel)

about = figures.heading("Head importance")
with about:
    st.markdown(f"{panels.model_caption(sel.model)}  \n**Task:** {S.task_label(sel.task)} · **method:** "
                f"{sel.method} · **normalisation:** {sel.normalize}{' + min-max' if sel.minmax else ''}")
    for note in S.language_notes(sel.task, sel.langs):
        st.caption(note)
    st.caption(captions.IMPORTANCE)
panels.need_languages(sel)

raws, maps, items = panels.guarded(cached.importance_maps, study, sel, what="Cannot find the head scores")
panels.offer_compute(study, items, key="importance", note="head scores")
if not maps:
    end_page()

zmin = min(float(m.min()) for m in maps.values())
zmax = max(float(m.max()) for m in maps.values())
lang = sel.lang if sel.lang in maps else next(iter(maps))
left, right = st.columns([3, 2])
with left:
    st.subheader(f"{S.lang_label(lang)}")
    figures.show(importance_heatmap(maps[lang], zmin=zmin, zmax=zmax), key="focus_map",
                 name=f"importance_{sel.task}_{lang}_{sel.method}",
                 title=f"Head importance: {S.task_label(sel.task)} in {S.lang_label(lang)}",
                 caption=f"{sel.model}; {sel.method}, {sel.normalize}; layer 0 at the bottom.")
with right:
    st.subheader("Top heads")
    st.dataframe(tables.top_heads(maps, lang), hide_index=True, height=420)

table = tables.importance_table(maps, raws)
st.download_button("Download all maps (CSV)", table.to_csv(index=False).encode(), key="csv",
                   file_name=safe_filename(f"importance_{sel.task}_{sel.method}_{sel.normalize}.csv"), mime="text/csv")

if len(maps) > 1:
    st.subheader("All languages (one colour scale)")
    figures.show(small_multiples(maps, zmin=zmin, zmax=zmax), name=f"importance_{sel.task}_all",
                 key="multiples", title=f"Head importance of {S.task_label(sel.task)} in every language",
                 caption=f"{sel.model}; {sel.method}, {sel.normalize}; one colour scale.")
    a, b = st.columns(2)
    with a:
        st.subheader("Do the languages rank heads alike?")
        names, rho, band = cached.spearman(maps)
        figures.show(spearman_heatmap(names, rho, band=band), name=f"spearman_{sel.task}", key="spearman",
                     title="Do the languages rank heads alike? (Spearman)",
                     caption=captions.spearman_caption(maps[lang].size, band))
    with b:
        st.subheader("Where in the stack?")
        figures.show(layer_profile(raws), name=f"layers_{sel.task}", key="profile",
                     title="Where in the stack?", caption=captions.LAYER_PROFILE)
