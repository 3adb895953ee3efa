"""Lessons: the lessons on this server, their steps (open, reorder, delete), the file and the handout."""

import streamlit as st

from headprune_app import captions, figures, lessons_view, roles
from headprune_app.page_end import end_page
from headprune_core.plans import lessons as L

about = figures.heading("Lessons")
with about:
    st.caption("A lesson walks a class through the dashboard's live views, step by step, with the teacher's notes. "
               "Add a step from any page with **Add to a lesson** at the top; present one from the sidebar or here.")
    st.markdown(captions.TWO_SCREENS)
found, problems = lessons_view.lessons()
for problem in problems:
    st.warning(problem, icon=":material/school:")
if not found:
    st.info("No lessons yet: add a view to a new lesson with **Add to a lesson** at the top of any page.")
    end_page()
if done := st.session_state.pop("_lesson_done", None):
    st.success(done, icon=":material/check:")
name = st.selectbox("Lesson", list(found), format_func=lambda n: f"{found[n].title} ({n})", key="lessons_pick")
lesson = found[name]
shipped = L.is_preset(lesson)
with figures.aside(about):
    st.caption(f"{len(lesson.steps)} steps · plan **{lesson.plan or 'any'}** · "
               + ("shipped with headprune: a change is saved as your copy in the cache" if shipped
                  else f"file `{lesson.source}`"))
    if lesson.description:
        st.markdown(lesson.description)
start, download, _ = st.columns([1, 1, 3])
if start.button("Present it", type="primary", icon=":material/school:", key="lesson_present"):
    lessons_view.start(lesson, 1)
download.download_button("The lesson file", L.render(lesson), file_name=f"{name}.md", mime="text/markdown",
                         icon=":material/download:", key="lesson_file")
editable = roles.is_teacher()
if not editable:
    roles.student_note("changing lessons")
for k in range(1, len(lesson.steps) + 1):
    lessons_view.step_row(lesson, k, editable=editable)
if editable and not shipped:
    with st.expander("Delete this lesson"):
        sure = st.checkbox(f"Yes, delete **{lesson.title}** (`{lesson.source}`)", key="lesson_delete_sure")
        if st.button("Delete the lesson", disabled=not sure, key="lesson_delete"):
            roles.require("deleting lessons")
            L.delete(name)
            st.session_state["_lesson_done"] = f"Deleted the lesson {name}."
            st.session_state.pop("lessons_pick", None)
            st.rerun()
