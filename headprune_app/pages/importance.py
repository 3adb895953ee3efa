"""Head importance: layer x head maps per language, their similarity, per-layer profile, top heads."""

import streamlit as st

from headprune_app import cached, charts
from headprune_app import selection as S
from headprune_core.base.files import safe_filename

sel: S.Selection = cached.selection()
study = cached.study_for(sel)

st.title("Head importance")
st.markdown(f"{cached.model_caption(sel.model)}  \n**Task:** {S.task_label(sel.task)} · **method:** {sel.method}"
            f" · **normalisation:** {sel.normalize}{' + min-max' if sel.minmax else ''}")
for note in S.language_notes(sel.task, sel.langs):
    st.caption(note)
st.caption("**What the papers found.** Ma et al. 2021: gradient importance ranks heads alike across languages "
           "(mBERT POS Spearman 0.67-0.87, XLM-R 0.94-0.97), and raw importance sits in the lower layers. **What "
           "you see here.** This model's maps per language, ranked on each language's dev sentences with the "
           "source-language model, and their Spearman correlations against the chance band of random rankings.")
if not sel.langs:
    st.warning(f"No language selected, or no corpus of task '{sel.task}' is prepared in this cache.")
    cached.offer_prepare()
    st.stop()

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
        st.caption(f"Spearman correlation of the languages' rankings of all {maps[lang].size} heads, ordered by "
                   "average-linkage clustering (similar languages side by side). Chance band: two random "
                   f"rankings of {maps[lang].size} heads give a rho within ±{band:.2f} 95% of the time; values "
                   "in parentheses are inside it. Ma et al. 2021 found 0.67-0.87 for mBERT POS and 0.94-0.97 "
                   "for XLM-R.")
    with b:
        st.subheader("Where in the stack?")
        st.plotly_chart(charts.layer_profile(raws), config=charts.png_config(f"layers_{sel.task}"), key="profile")
        st.caption("Share of each language's raw (unnormalised) importance per layer: per-layer normalisation "
                   "would hide it.")
