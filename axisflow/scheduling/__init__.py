"""Scheduling, pure (no xDSL): the schedule model and its rules, the
scheduler, memory accounting, the NumPy evaluator and the never-worse guard.

* ``schedule``: the schedule model (``Schedule``, its items);
  ``check``: ``check_schedule``, the rules a valid schedule keeps;
* ``walker``: the one walk over a schedule, its scope stack and storage
  rules, which the checker, the memory accounting, the evaluator and the
  lowering plan are clients of;
* ``scheduler``: a classified forest to a schedule (placement, split,
  demotion); ``guard``: never worse than not batching;
* ``memory``: sizes, live ranges, peaks and the memory report;
* ``evaluate``: the NumPy reference evaluator (``compare``), with
  ``contraction`` (compiled einsums), ``pages`` (arrays mapped before
  they are written) and ``assemble`` (the residual);
* ``options``: the option vocabularies the frontends share.

The IR-level embedding API (``schedule_module``, ``schedule_expression``)
is ``axisflow.pipeline``; the ``sched`` ops convert to and from the model in
``axisflow.dialects.sched_model``.
"""
