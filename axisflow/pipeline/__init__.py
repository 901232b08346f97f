"""The fusion pipeline: schedule by role, account memory, check the numbers.

Pure modules (no xDSL): ``model`` (the forest the pipeline works on),
``scheduler`` (roles -> ordered schedule, with split and demotion),
``schedule`` (the schedule and its validity rules), ``memory`` (sizes, live
ranges, peaks, report) and ``evaluate`` (NumPy reference evaluator). IR
plumbing: ``ir`` (``batch.forest`` -> model).
"""
