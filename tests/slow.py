"""What the fast tier leaves out, and why: the one list of slow tests.

The default run (`bash scripts/test.sh`) runs every test. The fast tier, `bash scripts/test.sh -m "not conformance
and not slow"`, leaves out Arm's conformance tests (marked where they are written) and the tests marked `slow` here:
conftest.py's pytest_collection_modifyitems marks them from these tables, by module and test function name (a new
test is fast until it is named here). The fast tier still runs tests of every test module outside SLOW_MODULES (so
every layer of tosa_vk), and one case of each sweep in SAMPLED. tests/test_tiers.py checks that every name here is a
test module / function that exists.

Drawn from measured durations (`pytest -m "not conformance" --durations=0 -n 2`, then the fast tier's own): a test
function of 3 s or more there (2 s in the fast tier's run; the 2 cores were shared) is slow, a sweep whose first case
is quicker is sampled. docs/install.md has the tiers' times.
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
SWEEP = "an operator x type x shape sweep: one case of each test function is enough for the fast tier"

# Whole modules: every test in them is slow.
SLOW_MODULES: dict[str, str] = {
    "test_fuzz": FUZZ,
    "test_vgf_scenario_flow": ANCHORS,
}

# module::function (every case of it; a test in a class: module::Class::function)
SLOW_TESTS: dict[str, str] = {
    "test_arm_sdk_anchor::test_add_matches_numpy": ANCHORS,
    "test_arm_sdk_anchor::test_inputs_and_outputs_keep_the_graph_order": ANCHORS,
    "test_bench::test_built_graphs_join_the_model_suite": KERNELS,
    "test_bench::test_markdown_table": ANCHORS,
    "test_bench::test_report_structure": ANCHORS,
    "test_bench_harness::test_harness_on_an_exported_vgf_with_runs_in_flight": THREADS,
    "test_bench_iree::test_a_refused_compile_is_a_skip_with_its_reason_and_is_cached": ANCHORS,
    "test_bench_iree::test_a_vulkan_first_run_that_does_not_end_is_a_skip_and_remembered": ANCHORS,
    "test_bench_iree::test_anchor_matches_the_reference_backend": ANCHORS,
    "test_bench_iree::test_bench_runs_the_anchors_and_reports_x_iree": ANCHORS,
    "test_binding_roles::test_a_vgf_segment_writing_its_input_resource_is_refused": KERNELS,
    "test_binding_roles::test_outputs_the_shader_reads_or_only_writes_run": KERNELS,
    "test_binding_roles::test_reflection_finds_what_the_shader_writes_and_reads": KERNELS,
    "test_builtin_kernels::test_a_damaged_library_is_ignored_with_a_warning": MODELS,
    "test_builtin_kernels::test_graphs_of_new_shapes_run_without_glslc": SUBPROCESS,
    "test_builtin_kernels::test_the_model_graphs_kernels_are_all_shipped": MODELS,
    "test_builtin_kernels::test_the_shipped_models_run_without_glslc": SUBPROCESS,
    "test_cache_hardening::test_a_consistently_rewritten_entry_is_checked_never_run": SUBPROCESS,
    "test_cache_hardening::test_a_spirv_cache_file_that_is_a_fifo_is_ignored": SUBPROCESS,
    "test_cache_hardening::test_an_odd_entry_is_ignored_and_rebuilt_never_a_hang_or_a_failed_load": SUBPROCESS,
    "test_capture_compare::test_capture_all_returns_every_tensor_bit_exact_and_keeps_the_outputs": MODELS,
    "test_capture_compare::test_capture_by_name_and_clear_errors": MODELS,
    "test_capture_compare::test_compare_locates_a_broken_custom_kernel_in_a_shipped_model": MODELS,
    "test_capture_compare::test_compare_passes_on_the_shipped_models": MODELS,
    "test_capture_compare::test_run_dump_intermediates_writes_every_tensor": MODELS,
    "test_class_tier::test_a_model_with_classes_forced": KERNELS,
    "test_class_tier::test_fingerprint_is_the_programs_bytes_and_sources": KERNELS,
    "test_cli::test_info_json_matches_model_record": SUBPROCESS,
    "test_cli::test_info_text": SUBPROCESS,
    "test_cli_practitioner::test_version_and_python_m_tosa_vk": SUBPROCESS,
    "test_compile::test_host_placed_operators_give_the_same_results": MODELS,
    "test_conv_tiled::test_shipped_cnns_compile_to_tiled_kernels_for_each_gpu_class": MODELS,
    "test_custom_ops::test_cli_check_runs_the_numpy_twin": SUBPROCESS,
    "test_custom_ops::test_glslc_errors_name_the_custom_op": KERNELS,
    "test_custom_ops::test_spirv_buffer_payload_runs_unregistered": KERNELS,
    "test_debug_labels::test_loops_and_images_are_labelled_the_same_bytes_either_way": KERNELS,
    "test_device_classes::test_devices_shows_the_class": SUBPROCESS,
    "test_device_classes::test_targets_command_lists_the_classes": SUBPROCESS,
    "test_device_tensors::test_chained_on_the_device_equals_the_host_path_with_no_bytes_across": KERNELS,
    "test_device_tensors::test_close_with_runs_pending_does_not_hang": THREADS,
    "test_device_tensors::test_device_outputs_from_submitted_runs_chain": THREADS,
    "test_device_tensors::test_submitted_runs_equal_sequential_runs_in_order": THREADS,
    "test_devices::test_cli_lists_devices_when_tosa_vk_device_names_none": SUBPROCESS,
    "test_doctor::test_doctor_imports_no_heavy_package": SUBPROCESS,
    "test_doctor::test_without_a_driver_doctor_and_the_vulkan_backend_say_so": SUBPROCESS,
    "test_doctor::test_without_a_loader_the_cli_says_what_is_missing": SUBPROCESS,
    "test_doctor::test_without_a_loader_the_package_and_the_reference_backend_work": SUBPROCESS,
    "test_frictions::test_first_run_says_it_is_generating": SUBPROCESS,
    "test_frictions::test_k_analysis_keeps_what_may_match_a_test_id": KERNELS,
    "test_frictions::test_k_that_names_other_tests_generates_no_conformance_selection": SUBPROCESS,
    "test_fuse::test_benchmark_graphs_fused": KERNELS,
    "test_fuse::test_chains_with_other_tensors": KERNELS,
    "test_fuse::test_shipped_models_fused_equal_unfused_with_fewer_dispatches": MODELS,
    "test_fuse::test_slices_and_concats_as_views": KERNELS,
    "test_fused_render::test_the_model_graphs_fused_kernels_are_calls": MODELS,
    "test_glsl_compiler::test_a_new_process_with_every_cache_empty_and_no_glslc_runs_a_graph_of_new_shapes": SUBPROCESS,
    "test_glsl_compiler::test_glslc_and_glslang_make_the_same_modules": SUBPROCESS,
    "test_glsl_gate::test_a_dev_zero_include_the_gate_missed_ends_in_an_error": KERNELS,
    "test_glsl_gate::test_a_fifo_the_gate_missed_stops_the_compile_in_time": THREADS,
    "test_gpu_run::test_glslc_shim_compiles_shipped_kernels": SUBPROCESS,
    "test_gpu_run::test_no_device_is_a_report_saying_why": SUBPROCESS,
    "test_malformed::test_fuzzed_models_fail_cleanly": THREADS,
    "test_malformed::test_garbage_files": SUBPROCESS,
    "test_malformed::test_missing_file": SUBPROCESS,
    "test_malformed::test_truncated_model": SUBPROCESS,
    "test_malformed::test_undefined_tensor_name": SUBPROCESS,
    "test_malformed::test_unknown_op_code": SUBPROCESS,
    "test_malformed::test_wrong_version": SUBPROCESS,
    "test_mlir::test_cli_info_run_compare_take_mlir": SUBPROCESS,
    "test_mlir::test_mlir_runs_like_its_tosa_reference": MODELS,
    "test_mlir::test_mlir_runs_like_its_tosa_vulkan": MODELS,
    "test_mlir::test_program_cache_keys_mlir_by_its_bytes": SUBPROCESS,
    "test_mlir::test_sigterm_while_serializing_removes_the_private_folder": SUBPROCESS,
    "test_models_reference::test_run_cli_error_exit_code": SUBPROCESS,
    "test_models_reference::test_run_cli_with_named_inputs": SUBPROCESS,
    "test_models_reference::test_run_cli_writes_desc_outputs": SUBPROCESS,
    "test_node_data::test_compare_node_data_marks_the_first_divergence_and_writes_no_infinity": MODELS,
    "test_node_data::test_compare_node_data_of_a_shipped_model": MODELS,
    "test_node_data::test_reference_profile_node_data_is_each_operators_ms": MODELS,
    "test_node_data::test_vulkan_profile_node_data_shares_each_fused_kernel_among_its_operators": MODELS,
    "test_partition_control::test_host_ops_on_resnet_int8_is_bit_exact": MODELS,
    "test_partition_control::test_placement_rules_read_back_as_a_partition_file": KERNELS,
    "test_plan::test_plan_cli_json": SUBPROCESS,
    "test_profile::test_profile_prints_each_kernel_in_ms_and_totals": MODELS,
    "test_profile::test_trace_has_one_event_per_kernel_per_run_covering_every_placed_operator": KERNELS,
    "test_program_cache::test_two_processes_filling_one_cache_at_once": SUBPROCESS,
    "test_pte::test_info_parses_each_delegate_once": KERNELS,
    "test_pte_tools::test_cli_compare_of_a_pte_with_node_data": KERNELS,
    "test_quantized_io::test_cli_run_with_qparams": SUBPROCESS,
    "test_quantized_io::test_float_data_through_qparams_equals_quantizing_by_hand": KERNELS,
    "test_ray::test_map_batches_matches_model_run_row_by_row": ANCHORS,
    "test_ray::test_the_examples_use_compute_not_the_deprecated_concurrency": ANCHORS,
    "test_readme::test_python_block_runs": "the docs' code blocks, each run as written",
    "test_runtime_hardening::test_close_stops_a_runaway_run_at_once": SUBPROCESS,
    "test_shared_device::test_a_pte_input_read_on_the_host_refuses_a_device_tensor": KERNELS,
    "test_shared_device::test_a_pte_model_takes_and_gives_device_tensors": KERNELS,
    "test_shared_device::test_a_shared_device_passed_on_stays_open_for_the_model_given_it": KERNELS,
    "test_shared_device::test_models_loaded_with_defaults_chain_with_no_bytes_across": THREADS,
    "test_shared_device::test_small_programs_run_on_the_sibling_and_tensors_cross_as_copies": THREADS,
    "test_shared_device::test_the_device_is_released_when_the_last_model_closes": KERNELS,
    "test_split_buffers::test_160mib_gather_table_runs": KERNELS,
    "test_split_buffers::test_256mib_matmul_weight_runs": KERNELS,
    "test_startup::test_a_program_cache_hit_imports_and_parses_only_what_it_runs": SUBPROCESS,
    "test_startup::test_the_run_command_imports_only_its_own_module": SUBPROCESS,
    "test_startup::test_the_vulkan_backend_imports_no_compile_stage": SUBPROCESS,
    "test_texels::test_built_graphs_identical_with_and_without_texel_reads": MODELS,
    "test_tflite_import::test_import_errors_name_the_file": SUBPROCESS,
    "test_tflite_import::test_import_refuses_to_overwrite": SUBPROCESS,
    "test_tflite_import::test_import_then_run_matches_numpy": SUBPROCESS,
    "test_tflite_import::test_int8_import_runs_float_data_through_the_tflite_qparams": SUBPROCESS,
    "test_threads::test_dropped_models_free_their_device": THREADS,
    "test_untrusted_payloads::test_a_runaway_shader_ends_at_the_timeout_and_close_does_not_wait_for_it": SUBPROCESS,
    "test_untrusted_payloads::test_ctrl_c_ends_the_cli_even_when_the_main_thread_misses_it": SUBPROCESS,
    "test_untrusted_payloads::test_ctrl_c_stops_a_cli_run": SUBPROCESS,
    "test_untrusted_payloads::test_kernel_numbers_are_checked_against_the_device": SUBPROCESS,
    "test_untrusted_payloads::test_payload_interface_is_checked_before_any_vulkan_call": SUBPROCESS,
    "test_vgf_container::test_fuzz_never_crashes_or_hangs": THREADS,
    "test_vgf_custom::test_color_matrix_buffers_in_two_sets_with_baked_push_constants": ANCHORS,
    "test_vgf_custom::test_model_converter_graph_and_compute_segments_run_on_tosa_vk": ANCHORS,
    "test_vgf_custom::test_model_converter_vgf_runs_on_tosa_vk": ANCHORS,
    "test_vgf_custom::test_outputs_sharing_memory_are_copied": ANCHORS,
    "test_vgf_export::test_models": ANCHORS,
    "test_vgf_graph::test_cli_exports_graph_segments_by_default_and_compute_on_request": MODELS,
    "test_vgf_graph::test_graph_and_compute_segments_run_in_arms_documented_flow": ANCHORS,
    "test_vgf_graph::test_graph_export_runs_in_arms_documented_flow": ANCHORS,
    "test_vgf_hardening::test_a_zero_workgroup_size_is_refused_not_a_segfault": SUBPROCESS,
    "test_vulkan_convolution::test_conv2d_reduction_split_into_passes": KERNELS,
    "test_vulkan_data_layout::test_big_pad_and_gather": KERNELS,
    "test_vulkan_elementwise_binary::test_big_vec4": KERNELS,
    "test_vulkan_reduction::test_argmax_spills_into_y": KERNELS,
    "test_vulkan_reduction::test_reduce_spills_into_y": KERNELS,
    "test_vulkan_reduction::test_resize_spills_into_y": KERNELS,
    "test_vulkan_runtime::test_no_leaks_over_2000_runs": THREADS,
    "test_vulkan_tensor_ops::test_max_pool_big_grid": KERNELS,
    "test_vulkan_tensor_ops::test_rfft2d_big_grid": KERNELS,
    "test_vulkan_type_conversion::test_cast_large_tensor_spills_grid": KERNELS,
    "test_vulkan_type_conversion::test_rescale_rank0_and_large_per_channel": KERNELS,
    "test_vulkan_unary::test_big_grid_and_scalar": KERNELS,
    "test_warmup::test_warm_up_on_and_off_same_outputs": MODELS,
    "test_wheel::test_the_build_hook_loads_the_kernel_builder_without_vulkan": SUBPROCESS,
    "test_wheel::test_the_version_has_one_source": SUBPROCESS,
    "test_wheel::test_the_wheel_has_every_package_and_its_data": SUBPROCESS,
}

# Parametrized sweeps (a module: each of its parametrized test functions; or module::function): the fast tier runs
# the first case of each, the default run all of them.
SAMPLED: dict[str, str] = {
    "test_cli::test_a_pipe_closed_early_ends_the_command_quietly": SUBPROCESS,
    "test_block_scaled": SWEEP,
    "test_conv_tiled": SWEEP,
    "test_int64": SWEEP,
    "test_layout_1_1": SWEEP,
    "test_matmul_coopmat": SWEEP,
    "test_matmul_tiled": SWEEP,
    "test_pte_host_lowering": SWEEP,
    "test_reduction_subgroup": SWEEP,
    "test_row_groups": SWEEP,
    "test_tensor_ops_1_1": SWEEP,
    "test_vulkan_convolution": SWEEP,
    "test_vulkan_data_layout": SWEEP,
    "test_vulkan_elementwise_binary": SWEEP,
    "test_vulkan_reduction": SWEEP,
    "test_vulkan_tensor_ops": SWEEP,
    "test_vulkan_type_conversion": SWEEP,
    "test_vulkan_unary": SWEEP,
    "test_cache_hardening::test_a_folder_others_may_write_is_not_used": KERNELS,
    "test_class_tier::test_each_gpu_class_compiles_a_held_out_cnn_to_its_own_program": KERNELS,
    "test_conv2d_1_1::test_vulkan_matches_the_reference": KERNELS,
    "test_conv_slice_prologue::test_a_slice_before_a_convolution": KERNELS,
    "test_flatbuffer::test_model_reference_run_on_resaved_file": SUBPROCESS,
    "test_flatbuffer::test_models_roundtrip_and_validate": MODELS,
    "test_fuse::test_a_classifier_after_a_global_pool_is_the_reductions_kernel": KERNELS,
    "test_fuse::test_a_layout_tail_is_the_stores_index_map": KERNELS,
    "test_fuse::test_quantized_epilogues_are_bit_exact": KERNELS,
    "test_fuse::test_random_element_wise_groups": KERNELS,
    "test_fuse::test_reduction_pairs_and_epilogues_are_one_kernel": KERNELS,
    "test_fuse::test_shared_projections_become_one_convolution": KERNELS,
    "test_plan::test_memory_packing_on_the_shipped_models": MODELS,
    "test_program::test_a_loaded_program_runs_like_the_compiled_one": MODELS,
    "test_program::test_round_trip_is_exact": MODELS,
    "test_program_cache::test_a_damaged_entry_is_rebuilt_never_run": KERNELS,
    "test_program_cache::test_a_header_for_another_device_driver_or_version_is_ignored": KERNELS,
    "test_program_cache::test_a_verified_hit_runs_unchecked_and_a_flipped_byte_is_rebuilt_or_checked": KERNELS,
    "test_pte::test_cli_run_compare": MODELS,
    "test_pte::test_pte_matches_eager": MODELS,
    "test_pte_archs::test_pte_arch_matches_pytorch": MODELS,
    "test_pte_host_ops::test_pte_host_fixture_matches_eager": MODELS,
    "test_pte_tools::test_extracted_delegates_reproduce_the_programs_run": MODELS,
    "test_push_layouts::test_every_built_in_kernel_carries_its_layout": MODELS,
    "test_spirv_graph::test_model_converter_model": MODELS,
    "test_texels::test_shipped_models_identical_with_and_without_texel_reads": MODELS,
    "test_vgf_graph::test_model_converter_vgf_runs_on_tosa_vk": KERNELS,
}


def why(module: str, function: str) -> str | None:
    """Why every case of `module::function` is slow (`function`: its name, or Class::name), or None."""
    return SLOW_MODULES.get(module) or SLOW_TESTS.get(f"{module}::{function}")


def sampled(module: str, function: str) -> bool:
    """Whether `module::function` is a sweep the fast tier runs one case of."""
    return module in SAMPLED or f"{module}::{function}" in SAMPLED
