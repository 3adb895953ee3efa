"""The follow bench's bookkeeping (bench/follow.py): the teacher's moves and the delays it reports."""

from bench.follow import LESSON, delays, moves, server_seen


def test_the_teacher_walks_forward_then_back_within_the_lesson():
    assert moves(1, 4, 8) == [2, 3, 4, 3, 2, 1, 2, 3]
    assert moves(1, 2, 3) == [2, 1, 2]


def test_a_delay_counts_only_an_arrival_at_that_step_before_the_teachers_next_click():
    clicks = [(10.0, 2), (30.0, 3), (50.0, 2)]
    on_time = [(11.5, 2), (33.0, 3), (51.0, 2)]
    late = [(12.0, 2), (31.0, 4), (52.0, 3)]  # a wrong step, then step 3 after the teacher had gone back to 2
    never = [(5.0, 1)]
    got = delays(clicks, [on_time, late, never], end=70.0)
    assert got["pairs"] == 9 and got["missed"] == 5  # late: steps 3 and 2; never: all three
    assert sorted(got["delays"]) == [1.0, 1.5, 2.0, 3.0]


def test_an_arrival_at_the_last_step_counts_until_the_end():
    got = delays([(10.0, 2)], [[(29.0, 2)], [(41.0, 2)]], end=40.0)
    assert got["delays"] == [19.0] and got["missed"] == 1


def test_the_servers_page_log_gives_each_students_runs_of_the_lessons_steps():
    runs = [{"session": "t", "teacher": True, "step": f"{LESSON}:2", "end": 11.0},
            {"session": "a", "teacher": False, "step": f"{LESSON}:2", "end": 12.5},
            {"session": "a", "teacher": False, "step": "", "end": 12.0},  # the home page, before the switch
            {"session": "b", "teacher": False, "step": f"{LESSON}:2", "end": 14.0},
            {"session": "b", "teacher": False, "step": "other-lesson:2", "end": 13.0}]
    seen = server_seen(runs)
    assert sorted(seen) == [[(12.5, 2)], [(14.0, 2)]]
    assert sorted(delays([(10.0, 2)], seen, end=30.0)["delays"]) == [2.5, 4.0]
