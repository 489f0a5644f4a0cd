"""Errors a user can act on: each names the file, the operator and the rule that failed."""

from __future__ import annotations

from typing import TypedDict


class Site(TypedDict, total=False):
    """Where in a graph an error is: keyword arguments of TosaError / TosaError.located, passed along as `**site`."""

    op: str | None
    index: int | None
    output: str | None
    region: str | None


class TosaError(Exception):
    """A graph breaks a rule of the TOSA specification (an ERROR_IF, REQUIRE or level check) or of the format.

    str(err) reads like `model.tosa: CONV2D #12 'conv_1': ERROR_IF(OH != ...)`.
    """

    def __init__(
        self,
        rule: str,
        *,
        op: str | None = None,
        index: int | None = None,
        output: str | None = None,
        file: str | None = None,
        region: str | None = None,
    ):
        self.rule = rule
        self.op = op
        self.index = index
        self.output = output
        self.file = file
        self.region = region
        super().__init__(self._text())

    def _text(self) -> str:
        where = []
        if self.file:
            where.append(f"{self.file}:")
        if self.region and self.region != "main":
            where.append(f"region '{self.region}'")
        if self.op:
            site = self.op + (f" #{self.index}" if self.index is not None else "")
            if self.output:
                site += f" '{self.output}'"
            where.append(site + ":")
        return " ".join(where + [self.rule])

    def located(
        self,
        *,
        op: str | None = None,
        index: int | None = None,
        output: str | None = None,
        file: str | None = None,
        region: str | None = None,
    ) -> TosaError:
        """The same error with more context filled in (fields already set are kept)."""
        return type(self)(
            self.rule,
            op=self.op if self.op is not None else op,
            index=self.index if self.index is not None else index,
            output=self.output if self.output is not None else output,
            file=self.file if self.file is not None else file,
            region=self.region if self.region is not None else region,
        )


class TosaFormatError(TosaError):
    """A file is not a readable TOSA 1.0 flatbuffer (truncated, wrong identifier, wrong version, corrupt)."""


class TosaTimeoutError(TosaError, TimeoutError):
    """A run passed its timeout_s."""
