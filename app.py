"""headprune dashboard: the frame and router. ``streamlit run app.py``

The sidebar holds the choices every page shares (study plan, model, task, setting, languages, importance
method and normalisation); each page reads them from ``st.session_state["selection"]``, calls
``headprune_app.cached`` and renders. Every choice is bound to the URL (``headprune_app.links``): a link reopens
the view.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from headprune_app import cached, figures, follow, lessons_view, links, nav, page_end, roles, timing
from headprune_core.base.cache import cache_root
from headprune_core.base.choices import METHODS, NORMALIZATIONS, SETTINGS
from headprune_core.data.refs import names_task
from headprune_core.encoders.models import EMBEDDED
from headprune_core.plans import selection as S
from headprune_core.plans.presets import available_plans

st.set_page_config(page_title="headprune", page_icon=":material/content_cut:", layout="wide")

PAGES = [st.Page(p.file, title=p.title, icon=p.icon, default=p.name == "home") for p in nav.PAGES]
METHOD_HELP = {"gate_grad": "|d loss / d head gate| (Michel et al.; Ma et al.)",
               "kv_grad": "key/value weight gradients (GradTS)", "taylor": "first-order Taylor (TextPruner)",
               "entropy": "attention concentration (no labels)", "random": "seeded random baseline"}
NORM_HELP = {"none": "raw scores", "layer_l2": "each layer divided by its L2 norm",
             "layer_sum": "each layer divided by its sum (Ma et al., GradTS)"}


def _model_name(model_id: str) -> str:
    return Path(model_id).name if "/" in model_id else model_id


def sidebar(follow_in_bar: bool = False) -> S.Selection:
    """The shared choices; widget keys carry their context so stale values never meet new options."""
    root = str(cache_root())
    plans, problems = available_plans()
    ready = [n for n, p in plans.items() if cached.model_info(p.model)["ready"]]
    names = list(plans)
    with st.sidebar:
        name = st.selectbox("Study plan", names, index=names.index(ready[0]) if ready else 0, key="plan",
                            bind="query-params",
                            help="A preset or a plan file in <cache>/plans: which results to compute and show.")
        plan = plans[name]
        st.caption(plan.description)
        for p in problems:
            st.caption(f":orange[unreadable plan file {p}]")
        teacher = roles.is_teacher()
        # a student picks among the models the plans name; the teacher (and the single user) any model
        models = list(dict.fromkeys([plan.model, *(EMBEDDED if teacher else (p.model for p in plans.values()))]))
        model = links.selectbox("Model", models, format_func=_model_name, key="model")
        other = ""
        if not teacher:
            for key in ("other_model", "finetuned"):
                links.refuse(key, "in class mode a student's session uses the models the teacher's plans name")
        else:
            other = st.text_input("Or another model", key="other_model", bind="query-params",
                                  placeholder="Hub id or local folder",
                                  help="Any BERT / RoBERTa / XLM-R / DistilBERT / ELECTRA encoder: a Hugging Face "
                                       "Hub id (needs network the first time) or a folder with config.json and "
                                       "weights.")
        finetuned = False
        if other.strip():
            other_info = cached.model_info(other.strip())
            if other_info["problem"]:
                st.error(other_info["problem"])
            else:
                model = other.strip()
                finetuned = st.checkbox("It is a fine-tuned token classifier: use its classifier as is",
                                        key="finetuned", bind="query-params",
                                        help="No fine-tuning: its id2label names the labels; the "
                                             "data's tags must be among them.")
        info = cached.model_info(model)
        if info.get("quantised"):
            st.caption(f":orange[{info['quantised']}]: {info.get('note') or ''}")
        elif info.get("note"):
            st.caption(info["note"])
        tasks = list(dict.fromkeys([*plan.tasks, "pos", "name", *cached.task_names(root)]))
        task = links.selectbox("Task", tasks, format_func=S.task_label, key="task",
                               help="Embedded tasks, and your own corpora (page 'Add data').")
        setting = st.radio("Setting", list(dict.fromkeys([*plan.settings, *SETTINGS])), horizontal=True,
                           key="setting", bind="query-params",
                           help="cross: fine-tune on one language, test on the others; "
                                "multi: fine-tune on every language")
        langs_ok = cached.prepared_languages(task, root)
        if task in plan.tasks and names_task(plan.sources, task):
            langs_ok = list(plan.task_langs(task))  # the plan names where this task's data comes from
        sources = list(dict.fromkeys([S.default_source(plan, langs_ok), *langs_ok]))
        source = links.selectbox("Fine-tuned on", sources, format_func=S.lang_label, key="source",
                                 disabled=setting == "multi")
        langs = links.multiselect("Languages", langs_ok, default=S.default_langs(plan, langs_ok),
                                  format_func=S.lang_label, key=f"langs:{name}:{task}")
        if not langs_ok:
            st.caption(":orange[No corpus of this task is prepared in this cache.]")
        lang = links.selectbox("Focus language", langs or [source], format_func=S.lang_label, key="lang")
        method = links.selectbox("Importance method", S.method_choices(plan, METHODS),
                                 format_func=lambda m: f"{m}: {METHOD_HELP.get(m, '')}", key="method")
        normalize = links.selectbox("Normalisation", NORMALIZATIONS,
                                    index=NORMALIZATIONS.index(S.DEFAULT_NORMALIZE),
                                    format_func=lambda n: f"{n}: {NORM_HELP.get(n, '')}", key="normalize")
        minmax = st.checkbox("Scale to [0, 1] (min-max)", value=S.DEFAULT_MINMAX, key="minmax",
                             bind="query-params")
        figures.presentation_toggle()
        lessons_view.picker(follow_in_bar)
        roles.teacher_panel()
        st.caption(f"Cache: `{root}`")
    return S.Selection(plan=plan, model=model, task=task, setting=setting, source=source, langs=tuple(langs),
                       lang=lang, method=method, normalize=normalize, minmax=minmax, finetuned=finetuned)


with timing.script_run() as run:  # HEADPRUNE_PAGE_LOG: each run's page and seconds (the classroom benchmark)
    shown = st.navigation(PAGES)
    run["page"] = shown.title
    roles.class_settings_or_stop()  # class mode only as `headprune serve --class` starts it
    roles.unlock_from_link()  # before the link's values are read: the token leaves the address
    links.remember()
    lesson = lessons_view.route(shown.url_path or "home")  # a lesson's step on another page: switch there
    top = st.container()  # the lesson's bar (or presentation's line) with its menu, and the link's notes
    menu = lessons_view.top_row(top, lesson)  # before the sidebar's toggle: leaving presentation sets its state
    st.session_state["selection"] = sidebar(lesson is not None and not follow.presenter())
    try:
        with roles.reading_only(), page_end.framed():  # a student's page computes nothing outside the queue
            shown.run()
    finally:  # also after a page's end_page(): the link as the page left it
        links.top(top, menu)
        lessons_view.adder(top, shown.url_path or "home", shown.title, menu)
