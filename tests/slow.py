"""What the fast tier leaves out, and why: the one list of slow tests.

The default run (`bash scripts/test.sh`) runs every test. The fast tier, `bash scripts/test.sh -m "not conformance
and not slow"`, leaves out Arm's conformance tests (marked where they are written) and the tests marked `slow` here:
conftest.py's pytest_collection_modifyitems marks them from these tables, by module and test function name (a new
test is fast until it is named here). The fast tier still runs tests of every test module outside SLOW_MODULES (so
every layer of tosa_vk), and one case of each sweep in SAMPLED. tests/test_tiers.py checks that every name here is a
test module / function that exists.

Measured with `pytest -m "not conformance" --durations=0 -n 2` (docs/install.md has the tiers' times); a test that
takes a second or more, or a sweep of many, belongs here.
"""

from __future__ import annotations

FAST_TIER = "not conformance and not slow"  # the fast tier's -m expression, as scripts/test.sh and the docs give it

# Why, once per kind of slow test
SUBPROCESS = "a fresh Python per case (imports, a Vulkan instance, cold caches): subprocess CLI / pytest runs"
MODELS = "the shipped models end to end (resources/models, tests/data): model fixture sweeps"
FUZZ = "fuzz samples, each in a worker process"
ANCHORS = "another toolchain (IREE, Arm's ML SDK, matplotlib) compiles or runs"
KERNELS = "compiles many kernels (glslc, lavapipe's LLVM) or runs large shapes"
THREADS = "waits on runs in flight, timeouts or worker threads"

# Whole modules: every test in them is slow.
SLOW_MODULES: dict[str, str] = {
    "test_fuzz": FUZZ,
    "test_bench_iree": ANCHORS,
    "test_arm_sdk_anchor": ANCHORS,
}

# module::function (every case of it; a test in a class: module::Class::function)
SLOW_TESTS: dict[str, str] = {
    "test_bench::test_report_structure": ANCHORS,
    "test_builtin_kernels::test_the_shipped_models_run_without_glslc": SUBPROCESS,
    "test_builtin_kernels::test_the_model_graphs_kernels_are_all_shipped": KERNELS,
    "test_builtin_kernels::test_graphs_of_new_shapes_run_without_glslc": SUBPROCESS,
    "test_doctor::test_without_a_loader_the_cli_says_what_is_missing": SUBPROCESS,
    "test_doctor::test_without_a_driver_doctor_and_the_vulkan_backend_say_so": SUBPROCESS,
    "test_frictions::test_k_that_names_other_tests_generates_no_conformance_selection": SUBPROCESS,
    "test_device_tensors::test_submitted_runs_equal_sequential_runs_in_order": THREADS,
    "test_conv_tiled::test_shipped_cnns_compile_to_tiled_kernels_for_each_gpu_class": MODELS,
    "test_custom_ops::test_cli_check_runs_the_numpy_twin": SUBPROCESS,
    "test_fuse::test_shipped_models_fused_equal_unfused_with_fewer_dispatches": MODELS,
}

# Parametrized sweeps (module::function, or a module: each of its parametrized functions): the fast tier runs the
# first case of each, the default run all of them.
SAMPLED: dict[str, str] = {
    "test_fuse::test_random_element_wise_groups": "random graphs, one per seed",
    "test_fuse::test_quantized_epilogues_are_bit_exact": KERNELS,
}


def why(module: str, function: str) -> str | None:
    """Why every case of `module::function` is slow (`function`: its name, or Class::name), or None."""
    return SLOW_MODULES.get(module) or SLOW_TESTS.get(f"{module}::{function}")


def sampled(module: str, function: str) -> bool:
    """Whether `module::function` is a sweep the fast tier runs one case of."""
    return module in SAMPLED or f"{module}::{function}" in SAMPLED
