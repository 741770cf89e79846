"""scalecast: a Python client for the scalecast LLM-training performance service.

    from scalecast import Client
    with Client("127.0.0.1:50051") as c:
        p = c.predict(model="llama2-70b", accelerator="h100-sxm-80gb", gpus=2048, tp=2)
        print(p.tokens_per_s, p.mfu, p.layout)
"""

from .client import Client
from .errors import ScalecastError
from .results import (Accelerator, Calibration, CalibrationProfile, CommTime, Comparison, Delta,
                      ErrorStats, Layout, Measurement, MemoryBreakdown, MlaSpec, ModelSpec, MoeSpec,
                      ParameterChange, Plan, PlanDoubling, PlanOption, PlanProgress, PowerEstimate,
                      Prediction, SweepProgress, SweepResult, System, TimeBreakdown, Uncertainty,
                      Validation, ValidationRow)
from .scenario import build_scenario, scenario_to_dict

__version__ = "0.1.0"

__all__ = [
    "Accelerator", "Calibration", "CalibrationProfile", "Client", "CommTime", "Comparison",
    "Delta", "ErrorStats", "Layout", "Measurement", "MemoryBreakdown", "MlaSpec", "ModelSpec",
    "MoeSpec", "ParameterChange", "Plan", "PlanDoubling", "PlanOption", "PlanProgress",
    "PowerEstimate", "Prediction", "ScalecastError", "SweepProgress", "SweepResult", "System",
    "TimeBreakdown", "Uncertainty", "Validation", "ValidationRow", "build_scenario", "scenario_to_dict",
]
