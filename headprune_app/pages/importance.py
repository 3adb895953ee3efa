"""Head importance: layer x head maps per language, their similarity, per-layer profile, top heads."""

import streamlit as st

from headprune_app import cached, captions, charts
from headprune_app import selection as S
from headprune_core.base.files import safe_filename

sel: S.Selection = cached.selection()
study = cached.study_for(sel)

st.title("Head importance")
st.markdown(f"{cached.model_caption(sel.model)}  \n**Task:** {S.task_label(sel.task)} · **method:** {sel.method}"
            f" · **normalisation:** {sel.normalize}{' + min-max' if sel.minmax else ''}")
for note in S.language_notes(sel.task, sel.langs):
    st.caption(note)
st.caption(captions.IMPORTANCE)
cached.need_languages(sel)

raws, maps, items = cached.guarded(cached.importance_maps, study, sel, what="Cannot find the head scores")
cached.offer_compute(study, items, key="importance", note="head scores")
if not maps:
    st.stop()

zmin = min(float(m.min()) for m in maps.values())
zmax = max(float(m.max()) for m in maps.values())
lang = sel.lang if sel.lang in maps else next(iter(maps))
left, right = st.columns([3, 2])
with left:
    st.subheader(f"{S.lang_label(lang)}")
    st.plotly_chart(charts.importance_heatmap(maps[lang], zmin=zmin, zmax=zmax),
                    config=charts.png_config(f"importance_{sel.task}_{lang}_{sel.method}"), key="focus_map")
with right:
    st.subheader("Top heads")
    st.dataframe(charts.top_heads(maps, lang), hide_index=True, height=420)

table = charts.importance_table(maps, raws)
st.download_button("Download all maps (CSV)", table.to_csv(index=False).encode(), key="csv",
                   file_name=safe_filename(f"importance_{sel.task}_{sel.method}_{sel.normalize}.csv"), mime="text/csv")
st.caption("PNG: use the camera icon at the top right of any chart.")

if len(maps) > 1:
    st.subheader("All languages (one colour scale)")
    st.plotly_chart(charts.small_multiples(maps, zmin=zmin, zmax=zmax),
                    config=charts.png_config(f"importance_{sel.task}_all"), key="multiples")
    a, b = st.columns(2)
    with a:
        st.subheader("Do the languages rank heads alike?")
        names, rho, band = cached.spearman(maps)
        st.plotly_chart(charts.spearman_heatmap(names, rho, band=band),
                        config=charts.png_config(f"spearman_{sel.task}"), key="spearman")
        st.caption(captions.spearman_caption(maps[lang].size, band))
    with b:
        st.subheader("Where in the stack?")
        st.plotly_chart(charts.layer_profile(raws), config=charts.png_config(f"layers_{sel.task}"), key="profile")
        st.caption(captions.LAYER_PROFILE)
