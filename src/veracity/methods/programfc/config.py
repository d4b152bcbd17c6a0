"""ProgramFC's configuration (Pan, Wu, Lu, Luu, Wang, Kan and Nakov, *Fact-Checking
Complex Claims with Program-Guided Reasoning*, ACL 2023). See README.md."""

from __future__ import annotations

from pydantic import Field

from veracity.core.bounds import PromptChars
from veracity.methods.base import ChoiceConfig
from veracity.methods.config import (
    GenerationSettings,
    ReplyTokens,
    ResultsPerSearch,
    RetrievalSettings,
)
from veracity.methods.programfc.examples import ExampleSet


class ProgramFCConfig(ChoiceConfig, GenerationSettings, RetrievalSettings):
    """Settings of the ``programfc`` method."""

    request_options = ("max_program_steps", "top_k", "examples")

    max_program_steps: int = Field(default=8, ge=1, le=16)  # Question/Verify steps per program
    # passages per sub-task: the release's program_execution.py (--num_retrieved) and README
    # run 5 (the paper's open-book setting says top-10 paragraphs)
    top_k: ResultsPerSearch = 5
    # the worked programs shown to the program writer (examples/<set>.yaml): ProgramFC's
    # prompt shows 20 for HoVer; "scifact" for SciFact claims; "none" for a zero-shot prompt
    examples: ExampleSet = "hover"
    max_answer_chars: PromptChars = Field(default=200, ge=20)
    max_step_chars: PromptChars = Field(default=300, ge=20)
    max_input_chars: PromptChars = 2000
    max_tokens: ReplyTokens = 800
