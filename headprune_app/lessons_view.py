"""Presenting a lesson (:mod:`headprune_core.plans.lessons`): one line at the top of the page with the lesson,
"step K of N", the step's title, Back / Next, the step's notes (a popover), Follow and a menu (the link, "Add to
a lesson"), so the step's figure starts on a projector's first screen; each step switches to its page with its
choices applied (:func:`apply_step`). ``?presenter=true`` is the teacher's screen: the notes in full, the next
step's title and the projector's link above the view; the projector's window follows the teacher's step
(:mod:`headprune_app.follow`), as students' windows do in class mode.

A lesson opens from the sidebar or from a link (``?lesson=NAME&step=K``, with the step's choices: Copy link gives
it, so a student who falls behind rejoins). A step whose view this server cannot show says why; the others work.
Notes are Markdown shown with Streamlit's Markdown (HTML in them is shown as text, never run).
"""

from __future__ import annotations

from urllib.parse import urlencode

import streamlit as st

from headprune_app import cached, figures, findings_view, follow, links, nav, roles
from headprune_app.resident import resident
from headprune_core.base.text import md_code, md_text
from headprune_core.findings.quote import card_ids
from headprune_core.plans import lessons as L
from headprune_core.plans.lessons import Lesson, available
from headprune_core.plans.presets import available_plans, find_plan

AT = "_lesson_at"  # (lesson, step) this session last switched to
SWITCHING = "_lesson_switching"  # (lesson, step) this session switched to and has not yet shown on its page
PENDING = "_lesson_pending"  # (lesson, step) asked for by a button drawn after the sidebar
PARAMS = ("lesson", "step")


def lessons() -> tuple[dict[str, Lesson], list[str]]:
    """The lessons on this server (presets and ``<cache>/lessons``) and a line for each unreadable file: read
    again only when a lesson file is added, removed or changed (one stat per file; a run asks several times)."""
    return _read(_signature())


def _signature() -> tuple:
    """Each lesson file's path, inode, modification time and size (a file replaced whole gets a new inode)."""
    out = []
    for path in L.lesson_files():
        try:
            info = path.stat()
        except OSError:  # gone since the listing: the next read says so or skips it
            continue
        out.append((str(path), info.st_ino, info.st_mtime_ns, info.st_size))
    return tuple(out)


@resident(max_entries=4)
def _read(signature: tuple) -> tuple[dict[str, Lesson], list[str]]:  # noqa: ARG001 -- the cache's key
    return available(pages=nav.NAMES)  # lessons are frozen: shared by every session, never changed in place


def current() -> tuple[Lesson, int] | None:
    """The lesson and step (1-based) the URL names, or None; a lesson this server lacks is said in one line."""
    name = st.query_params.get("lesson")
    if not name:
        return None
    found, _ = lessons()
    if name not in found:
        st.warning(f"The link's lesson **{md_text(name)}** is not on this server (lessons: "
                   f"{md_text(', '.join(found) or 'none', limit=2000)}).", icon=":material/school:")
        return None
    lesson = found[name]
    try:
        k = int(st.query_params.get("step", "1"))
    except ValueError:
        k = 1
    return lesson, min(max(k, 1), len(lesson.steps))


def apply_step(lesson: Lesson, k: int, *, how: str) -> None:
    """Switch to step ``k``: its page, with its choices in the URL (the page's own choices of this session that
    the step names are dropped first, so the link's values apply). ``how`` it was asked for: ``hand`` (Back,
    Next, Start: a teacher's moves the class), ``link`` or ``follow`` (the teacher's step, applied here)."""
    step = lesson.steps[k - 1]
    st.session_state[AT] = (lesson.name, k)
    if how == "hand":
        follow.arrived(lesson.name, k, by_hand=True)
    params: dict[str, list[str]] = {}
    chosen = list(step.params)
    if lesson.plan and "plan" not in dict(chosen) and plan_problem(lesson) is None:
        chosen.insert(0, ("plan", lesson.plan))  # the lesson's plan, unless the step names its own
    for key, value in chosen:
        if _bound_here(key):  # a widget of this page holds it: set the widget's value, not the URL
            st.session_state[key] = _like(st.session_state.get(key), value)
            continue
        params.setdefault(key, []).append(value)
        links.forget(key)  # a value-bound choice reads the URL again, even the value it showed last
        if key in st.session_state and not key.startswith("_"):
            del st.session_state[key]
    params.update({"lesson": [lesson.name], "step": [str(k)]})
    display = {figures.PRESENT_KEY: ["true"]} if figures.presenting() else {}
    for key, values in {**display, **follow.carried()}.items():
        if not _bound_here(key):  # a bound toggle keeps its state and writes it back into the URL itself
            params[key] = values
    page = nav.BY_NAME[_page_of(lesson, k)].file
    st.session_state[SWITCHING] = (lesson.name, k)
    st.switch_page(page, query_params={key: values if len(values) > 1 else values[0]
                                       for key, values in params.items()})


def plan_problem(lesson: Lesson) -> str | None:
    """Why this server cannot show the lesson's plan (not here, or its model not prepared); None when it can."""
    plans, _ = available_plans()
    if lesson.plan not in plans:
        return f"its plan {lesson.plan!r} is not on this server"
    if not cached.model_info(plans[lesson.plan].model)["ready"]:
        return f"the model of its plan {lesson.plan!r} ({plans[lesson.plan].model}) is not prepared here"
    return None


def _bound_here(key: str) -> bool:
    """Whether a widget of this run binds URL parameter ``key`` (Streamlit refuses to set those directly)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx  # here: Streamlit's runtime, in a session only

    ctx = get_script_run_ctx()
    if ctx is None:
        return False
    with ctx.session_state.query_params() as params:
        return params.is_bound(key)


def _like(current, text: str):
    """``text`` as the type of the widget's current value (a whole number for a slider of heads ...)."""
    if isinstance(current, bool):
        return text.strip().lower() in ("1", "true", "yes")
    for kind in (int, float):
        if isinstance(current, kind):
            try:
                return kind(text)
            except ValueError:
                return current
    return text


def start(lesson: Lesson, k: int) -> None:
    """Open step ``k`` from a button drawn after the sidebar (the picker, the Lessons page): on the next run,
    before any widget is drawn, as only then can the step's choices be set."""
    st.session_state[PENDING] = (lesson.name, k)
    st.rerun()


def route(page_name: str) -> tuple[Lesson, int] | None:
    """At the start of a run, before any widget: the lesson step this run shows. A step asked for by
    :func:`start`, the teacher's new step for a window that follows it, or the step the URL names; when the
    session arrives at a new step on another page than the step's, or by a link without the step's choices,
    switch there with them (:func:`apply_step`)."""
    follow.leave_if_asked()
    pending = st.session_state.pop(PENDING, None)
    if pending is not None:
        found, _ = lessons()
        if pending[0] in found:
            apply_step(found[pending[0]], pending[1], how="hand")
    due = follow.due()
    if due is not None:
        go_to_teacher(due)
    at = current()
    if at is None:
        st.session_state.pop(AT, None)
        return None
    lesson, k = at
    if st.session_state.get(AT) != (lesson.name, k):
        step = lesson.steps[k - 1]
        st.session_state[AT] = (lesson.name, k)
        follow.arrived(lesson.name, k, by_hand=False)
        prefetch(lesson)
        # a link on another page, or one that lacks some of the step's choices (typed by hand): apply the step
        lacking = [key for key, _ in step.params if key not in st.query_params]
        if not step.problem and (step.page != page_name or lacking or (lesson.plan and "plan" not in st.query_params)):
            apply_step(lesson, k, how="link")
    elif st.session_state.get(SWITCHING) == (lesson.name, k) and _page_of(lesson, k) != page_name:
        # this session switched to the step, and a run came on another page with the step's address: the switch
        # was lost to a request the browser sent before it (30 followers on 2 cores: runs of Head importance with
        # a Prune step's address); switch again. (A page opened later from the sidebar is left alone.)
        apply_step(lesson, k, how="link")
    if _page_of(lesson, k) == page_name:
        st.session_state.pop(SWITCHING, None)
    return at


def prefetch(lesson: Lesson) -> None:
    """When a lesson's notes quote Findings cards: have the server read its plan's cards now, in the background
    (:func:`findings_view.warm`), so the step that quotes them does not wait for that reading."""
    if any(card_ids(step.notes) for step in lesson.steps) and plan_problem(lesson) is None:
        findings_view.warm(find_plan(lesson.plan or "demo"))


def _page_of(lesson: Lesson, k: int) -> str:
    """The page step ``k`` shows (the Overview where the step cannot be shown here)."""
    return "home" if lesson.steps[k - 1].problem else lesson.steps[k - 1].page


def go_to_teacher(due: follow.Position) -> None:
    """Apply the teacher's step (a window that follows it): switch there unless this is already it."""
    follow.applied(due)
    found, _ = lessons()
    if due.lesson in found and current_names() != (due.lesson, due.step):
        apply_step(found[due.lesson], min(due.step, len(found[due.lesson].steps)), how="follow")


def current_names() -> tuple[str, int] | None:
    """The (lesson, step) the URL names, as written (no lesson file read)."""
    try:
        return st.query_params.get("lesson", ""), int(st.query_params.get("step", "1"))
    except ValueError:
        return None


def top_row(where, at: tuple[Lesson, int] | None):
    """The first line of a focused page (a lesson step, or presentation mode), in ``where``: the lesson's step bar
    (or the presenter view's notes), and a menu for the link, "Add to a lesson" and leaving presentation mode,
    which it returns. None (nothing drawn) on an ordinary page, where those stay as they are."""
    if at is None and not figures.presenting():
        follow.watch(where, go_to_teacher)
        return None
    figures.focus_css()
    if at is None:  # presenting, no lesson: the menu alone, at the window's top right corner (figures.MENU_KEY)
        row = where.container(key=figures.MENU_KEY)
        menu = row.popover("", icon=":material/more_vert:", help="This view's link, and leaving presentation mode")
    elif follow.presenter():
        menu = _presenter(where, *at)
    else:
        menu = bar(where, *at)
    follow.watch(where, go_to_teacher)
    with menu:
        figures.leave_presentation(st)
    return menu


def bar(where, lesson: Lesson, k: int):
    """In ``where`` (the top of the page): one line with the lesson, step K of N and its title, Back / Next, the
    step's notes (a popover), Follow, and the menu (returned)."""
    step = lesson.steps[k - 1]
    n = len(lesson.steps)
    row = where.container(border=True, horizontal=True, vertical_alignment="center", gap="small", wrap=False)
    row.markdown(f":material/school: :small[{md_text(lesson.title)}: step {k} of {n}:] **{md_text(step.title)}**",
                 width="stretch")
    _back_next(row, lesson, k)
    with row.popover("", icon=":material/sticky_note_2:", help="The teacher's notes for this step", key="lesson_notes"):
        _notes(lesson, k)
    if roles.class_mode() or follow.following():
        follow.toggle(row)
    menu = row.popover("", icon=":material/more_vert:", help="This view's link, adding it to a lesson, leaving "
                                                             "presentation mode, ending the lesson")
    with where:
        _problems(lesson, k)
    with menu:
        _end_button()
    return menu


def _back_next(row, lesson: Lesson, k: int) -> None:
    n = len(lesson.steps)
    if row.button("Back", icon=":material/arrow_back:", disabled=k == 1, key="lesson_back"):
        apply_step(lesson, k - 1, how="hand")
    if row.button("Next", icon=":material/arrow_forward:", disabled=k == n, key="lesson_next"):
        apply_step(lesson, k + 1, how="hand")


def _notes(lesson: Lesson, k: int) -> None:
    step = lesson.steps[k - 1]
    shown = st.session_state.get("plan")
    if lesson.plan and shown and shown != lesson.plan and "plan" not in dict(step.params):
        why = plan_problem(lesson) or "the sidebar shows another plan"
        st.caption(f":orange[This lesson is written for plan **{lesson.plan}**, but {why}: showing plan "
                   f"**{shown}**.]")
    st.markdown(findings_view.quoted(step.notes, lesson.plan or "demo") if step.notes else "*No notes.*")


def _problems(lesson: Lesson, k: int) -> None:
    step = lesson.steps[k - 1]
    if step.problem:
        st.warning(f"Lesson {lesson.name}, step {k}: this view cannot be shown here: {step.problem}.")


def _end_button() -> None:
    if st.button("End the lesson", icon=":material/stop_circle:", key="lesson_end"):
        st.session_state.pop(AT, None)
        for key in PARAMS:
            if key in st.query_params:
                del st.query_params[key]
        st.rerun()


def _presenter(where, lesson: Lesson, k: int):
    """The presenter view's top (``?presenter=true``): the step's notes in full, the next step's title, Back /
    Next (which move the projected window too: it follows the teacher's step), and the projector's link; the
    step's view follows below. Returns the menu."""
    step = lesson.steps[k - 1]
    n = len(lesson.steps)
    with where.container(border=True):
        row = st.container(horizontal=True, vertical_alignment="center", gap="small")
        row.markdown(f":material/co_present: Presenter view · :material/school: **{md_text(lesson.title)}**: step "
                     f"{k} of {n}: **{md_text(step.title)}**", width="stretch")
        _back_next(row, lesson, k)
        menu = row.popover("", icon=":material/more_vert:", help="This view's link, ending the lesson")
        notes, side = st.columns([3, 1])
        with notes:
            _notes(lesson, k)
        with side:
            st.markdown(f"**Next:** {md_text(lesson.steps[k].title)}" if k < n else "**Last step.**")
            st.caption("The projector's window: open this link there (it follows this view's Back and Next).")
            st.code(projector_link(lesson, k), language=None, wrap_lines=True)
        _problems(lesson, k)
    with menu:
        _end_button()
    return menu


def projector_link(lesson: Lesson, k: int) -> str:
    """The address of the projected window of a presenter view: the step in presentation mode, following."""
    base = (st.context.url or "").split("?")[0]  # this page: the step's
    return f"{base}?" + urlencode({"lesson": lesson.name, "step": k, figures.PRESENT_KEY: "true",
                                   follow.FOLLOW: "true"})


def picker(in_bar: bool) -> None:
    """In the sidebar: Follow (in class mode, or while following, unless the lesson's bar shows it: ``in_bar``);
    open a lesson at its first step (and a line for each lesson file that cannot be read)."""
    if not in_bar and (roles.class_mode() or follow.following()):
        follow.toggle(st)
    found, problems = lessons()
    if not found and not problems:
        return
    with st.expander(":material/school: Lessons", expanded=False):
        names = list(found)
        pick = st.selectbox("Lesson", names, format_func=lambda n: found[n].title, key="lesson_pick")
        if pick and st.button("Start the lesson", key="lesson_start"):
            start(found[pick], 1)
        for problem in problems:
            st.caption(f":orange[{problem}]")


NEW = "\u2795 a new lesson"


def adder(where, page: str, page_title: str, menu=None) -> None:
    """In ``where`` (the top of the page), or in the focused page's ``menu``: "Add to a lesson", which appends
    this view (its page and the choices its link carries) as a step, with notes typed there, to a new or existing
    lesson. The owner's only."""
    if not roles.is_teacher():
        return
    if menu is not None:
        menu.markdown(":material/playlist_add: **Add to a lesson**")
    with menu if menu is not None else where.popover("Add to a lesson", icon=":material/playlist_add:"):
        found, _ = lessons()
        pick = st.selectbox("Lesson", [NEW, *found], key="lesson_add_to",
                            format_func=lambda n: n if n == NEW else f"{found[n].title} ({len(found[n].steps)} steps)")
        name, title, replace_ok = pick, "", False
        if pick == NEW:
            name = st.text_input("File name (letters, digits, - _ .)", key="lesson_add_name").strip()
            title = st.text_input("Title", key="lesson_add_title")
            if name in found:
                replace_ok = st.checkbox(f"Replace the lesson **{name}** ({len(found[name].steps)} steps are lost)",
                                         key="lesson_add_replace")
        step_title = st.text_input("Step title", value=page_title, key=f"lesson_add_step:{page}")
        notes = st.text_area("Notes for this step (Markdown)", key="lesson_add_notes")
        if st.button("Add this view", icon=":material/add:", key="lesson_add", disabled=not name):
            _add(name, f"{page}?{links.query()}", step_title, notes, new=pick == NEW, title=title,
                 replace_ok=replace_ok)


def _add(name: str, view: str, step_title: str, notes: str, *, new: bool, title: str, replace_ok: bool) -> None:
    """Write the step (the server side of the owner's control: a student's session is refused here too)."""
    roles.require("writing lessons")
    try:
        step = L.make_step(step_title, view, notes, pages=nav.NAMES)
        lesson, path = L.add_step(name, step, title=title, plan=cached.selection().plan.name, new=new,
                                  replace_existing=replace_ok)
    except L.LessonError as err:
        st.error(f"Not added: {err}", icon=":material/error:")
        return
    st.success(f"Added as step {len(lesson.steps)} of **{md_text(lesson.title)}** ({md_code(path)}).",
               icon=":material/check:")


def step_row(lesson: Lesson, k: int, *, editable: bool) -> None:
    """One step on the Lessons page: its title and view, Open, and (for the owner) up, down and delete."""
    step = lesson.steps[k - 1]
    with st.container(border=True, key=f"lesson_step_{k}"):
        text, *buttons = st.columns([8, 1, 1, 1, 1], vertical_alignment="center")
        view = step.page + (f"?{step.query()}" if step.params else "")
        text.markdown(f"**{k}. {md_text(step.title)}** · {md_code(view)}")
        if step.problem:
            text.caption(f":orange[Lesson {lesson.name}, step {k}: {step.problem}]")
        if buttons[0].button("Open", key=f"lesson_open_{k}", help="Present the lesson from this step"):
            start(lesson, k)
        if not editable:
            return
        n = len(lesson.steps)
        if buttons[1].button("", icon=":material/arrow_upward:", key=f"lesson_up_{k}", disabled=k == 1,
                             help="Move this step up"):
            _change(L.move_step(lesson, k, -1), f"Moved step {k} up.")
        if buttons[2].button("", icon=":material/arrow_downward:", key=f"lesson_down_{k}", disabled=k == n,
                             help="Move this step down"):
            _change(L.move_step(lesson, k, +1), f"Moved step {k} down.")
        with buttons[3].popover("", icon=":material/delete:", help="Delete this step"):
            if st.button(f"Delete step {k}", key=f"lesson_drop_{k}", disabled=n == 1,
                         help="A lesson keeps at least one step: delete the lesson instead"):
                _change(L.drop_step(lesson, k), f"Deleted step {k} ({step.title}).")


def _change(lesson: Lesson, done: str) -> None:
    """Save a reordered or shortened lesson (a shipped one as the cache's copy) and show it again."""
    roles.require("changing lessons")
    try:
        L.save(lesson, replace_existing=True)
    except L.LessonError as err:
        st.error(f"Not saved: {err}", icon=":material/error:")
        return
    st.session_state["_lesson_done"] = done
    st.rerun()
