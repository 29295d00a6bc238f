"""evaluator/common/shapes.py: a shape's size, how a message names it, and which shapes are timed
(one small test shape in quick CPU mode, the task's own list otherwise)."""
from evaluator.common import shapes
from evaluator.tasks import get_task


def test_shape_size_multiplies_the_integer_dimensions():
    assert shapes.shape_size({"M": 3, "N": 7}) == 21
    assert shapes.shape_size({"M": 3, "N": 7, "dtype": "fp32"}) == 21
    assert shapes.shape_size({}) == 1
    assert shapes.shape_size({"M": 0, "N": 5}) == 0


def test_fmt_names_a_shape_in_its_own_order():
    assert shapes.fmt({"M": 33, "N": 1000}) == "{M=33, N=1000}"
    assert shapes.fmt({"N": 1, "M": 2}) == "{N=1, M=2}"
    assert shapes.fmt({}) == "{}"


def test_quick_cpu_times_the_second_smallest_test_shape(monkeypatch):
    task = get_task("softmax")
    monkeypatch.setenv("EVALUATOR_QUICK", "1")
    second = sorted(task.test_shapes, key=shapes.shape_size)[1]
    assert shapes.bench_shapes(task, "cpu") == [second]
    assert shapes.bench_shapes(task, "cuda") == list(task.bench_shapes_gpu)


def test_without_quick_the_task_names_the_timed_shapes(monkeypatch):
    task = get_task("softmax")
    monkeypatch.setenv("EVALUATOR_QUICK", "0")
    assert shapes.bench_shapes(task, "cpu") == list(task.bench_shapes_cpu)
    assert shapes.bench_shapes(task, "cuda") == list(task.bench_shapes_gpu)
    assert task.bench_shapes_cpu and task.bench_shapes_cpu != task.bench_shapes_gpu
