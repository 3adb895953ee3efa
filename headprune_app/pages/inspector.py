"""Head inspector: tag a sentence with and without the current mask; one head's attention over its tokens."""

import streamlit as st

from headprune_app import cached, captions, figures, panels, state, tables
from headprune_app.page_end import end_page
from headprune_core.encoders.inspector import MAX_CHARS, bounded_words
from headprune_core.figures.heads import attention_heatmap
from headprune_core.plans import selection as S

sel: S.Selection = cached.selection()
study = cached.study_for(sel)

about = figures.heading("Head inspector")
with about:
    st.markdown(f"{panels.model_caption(sel.model)}  \n**Task:** {S.task_label(sel.task)} · fine-tuned on "
                f"{'+'.join(sel.train_langs())}")
    st.caption(captions.INSPECTOR)
ft = panels.guarded(S.finetune_config, study, sel, what="Cannot set up the fine-tuned model")
if not panels.offer_compute(study, [(f"fine-tuned model ({sel.task}, {'+'.join(sel.train_langs())})", ft)],
                            key="inspector"):
    end_page()

current = state.current_mask(ft.key(), sel.task)
with figures.aside(about):
    if current:
        st.info(f"Current mask (from Prune & evaluate): **{current.label}**.")
    else:
        st.info(captions.NO_MASK)
        st.page_link("headprune_app/pages/prune.py", label="Go to Prune & evaluate", icon=":material/content_cut:")
mask = current.mask() if current else None

examples = cached.sample_sentences(sel.task, sel.lang, cached.root())
text = st.text_input("A sentence, in any language", value=examples[0] if examples else "Anna sees the big dog .",
                     key=f"sentence:{sel.lang}", bind="query-params", max_chars=MAX_CHARS,
                     help="Words and punctuation are split as in the corpora.")
words, cut = bounded_words(text or "", ft.max_length)  # bounded before any work: a huge sentence costs nothing
if cut:
    st.caption(f":orange[{cut}]")
if not words:
    st.warning("Type a sentence to tag.")
    end_page()

full = panels.guarded(cached.tag, study, ft, sel.task, words, what="Cannot tag the sentence now")
masked = None
if mask is not None:
    masked = panels.guarded(cached.tag, study, ft, sel.task, words, mask, what="Cannot tag the sentence now")
if full["kind"] == "token":
    table = tables.tag_table(words, full, masked)
    st.dataframe(table, hide_index=True)
    if masked is not None:
        st.caption(f"{int(table['changed'].sum())} of {len(words)} labels change when the masked heads are "
                   "switched off.")
else:
    st.write(f"Full model: **{full['labels'][0]}**" + (f"; with the mask: **{masked['labels'][0]}**"
                                                       if masked is not None else ""))

st.subheader("One head's attention")
n_layers, n_heads = cached.head_shape(sel.model)
c1, c2, c3 = st.columns(3)
layer = c1.selectbox("Layer", list(range(n_layers)), key="layer", bind="query-params")
head = c2.selectbox("Head", list(range(n_heads)), key="head", bind="query-params")
gated = c3.checkbox("With the current mask", value=False, disabled=mask is None, key="gated", bind="query-params",
                    help="Heads of earlier layers that the mask removes change this head's inputs.")
if mask is not None and mask[layer, head] == 0:
    st.caption(captions.pruned_head_note(layer, head))
pieces, att = panels.guarded(cached.attention, study, ft, words, layer, head,
                             mask if gated and mask is not None else None, what="Cannot show the attention now")
figures.show(attention_heatmap(pieces, att, title=f"layer {layer}, head {head}"), key="attention",
             name=f"attention_{state.head_label((layer, head))}", title=f"Attention of layer {layer}, head {head}",
             caption=captions.ATTENTION)
