"""The follow bench's bookkeeping (bench/follow.py): the teacher's moves and the delays it reports."""

from bench.follow import delays, moves


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
