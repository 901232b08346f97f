"""Analyses over ``batch`` IR (built on the pure logic of ``axisflow.roles``)."""
