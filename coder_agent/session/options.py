"""A session's config options (`configOptions`): mode, model and reasoning effort, and for clients that show
boolean options (`session.configOptions.boolean`) auto-compaction and auto-continue (a turn of the agent's own when a
background job ends: `agent.wake`) — built and applied.

Editors draw their mode and model pickers from these; `session/set_config_option` and `session/set_mode`
come here, and the caller sends `config_option_update` (and `current_mode_update`) when a value changed. A select
option takes a value id, a boolean one a JSON boolean; anything else is refused naming the fix.
"""

from __future__ import annotations

from typing import cast, get_args

from coder_agent.config import ReasoningEffort
from coder_agent.errors import InvalidParams
from coder_agent.permissions import SANDBOXED_MODES, available_modes, is_mode
from coder_agent.protocol.schema import BooleanConfigOption, ConfigOption, SelectOption, SessionConfigOption
from coder_agent.session.session import Session
from coder_agent.session.state import SessionState

EFFORTS: tuple[str, ...] = get_args(ReasoningEffort)
DEFAULT_EFFORT = "default"
AUTO_COMPACT = "auto_compact"
AUTO_CONTINUE = "auto_continue"


def mode_config_option(current: str, sandboxed: bool) -> SessionConfigOption:
    """The session mode as a config option (editors draw a mode picker from it); `auto` only where the session's
    commands run inside a sandbox."""
    return SessionConfigOption(
        id="mode",
        name="Mode",
        description="How much the agent may do without asking.",
        category="mode",
        current_value=current,
        options=[SelectOption(value=m.id, name=m.name, description=m.description) for m in available_modes(sandboxed)],
    )


def session_options(session: Session) -> list[ConfigOption]:
    """The session's options as its client can show them."""
    return config_options(session.state, booleans=session.services.bridge.supports_boolean_options)


def config_options(state: SessionState, *, booleans: bool = False) -> list[ConfigOption]:
    """Every option with its current value (the complete list, as ACP requires); `booleans`: the client shows
    boolean options."""
    options: list[ConfigOption] = []
    options.append(mode_config_option(state.policy.mode, state.policy.sandboxed))
    config = state.config
    if config.model:
        models = list(dict.fromkeys([config.model, *config.models]))
        options.append(
            SessionConfigOption(
                id="model",
                name="Model",
                description="The model that answers (models come from `model` and `models` in the config).",
                category="model",
                current_value=config.model,
                options=[SelectOption(value=m, name=m) for m in models],
            )
        )
        options.append(
            SessionConfigOption(
                id="reasoning_effort",
                name="Reasoning effort",
                description="How much the model thinks before answering, where it supports it.",
                category="thought_level",
                current_value=config.reasoning_effort or DEFAULT_EFFORT,
                options=[SelectOption(value=DEFAULT_EFFORT, name="Model default")]
                + [SelectOption(value=e, name=e.capitalize()) for e in EFFORTS],
            )
        )
    if booleans:
        options.append(
            BooleanConfigOption(
                id=AUTO_COMPACT,
                name="Auto-compact",
                description=(
                    f"Summarise older turns when the context is {state.config.compact_threshold:.0%} full; "
                    "off, only when the conversation no longer fits the model's window."
                ),
                current_value=state.auto_compact,
            )
        )
        options.append(
            BooleanConfigOption(
                id=AUTO_CONTINUE,
                name="Auto-continue",
                description=(
                    "When a background job ends while the agent is idle, it starts a turn itself to act on the result "
                    f"(at most {state.config.wake.max_per_hour} an hour); off, you get a notice."
                ),
                current_value=state.continues_alone,
            )
        )
    return options


def apply_option(state: SessionState, config_id: str, value: str | bool, *, booleans: bool = False) -> bool:
    """Set one option; True if it changed. InvalidParams for an unknown option, or a value it does not take."""
    current = {option.id: option for option in config_options(state, booleans=booleans)}
    option = current.get(config_id)
    if option is None:
        raise InvalidParams(f"Invalid params: configId: unknown config option {config_id!r}")
    if isinstance(option, BooleanConfigOption):
        if not isinstance(value, bool):
            raise InvalidParams(f"Invalid params: value: {config_id} is a boolean option; send true or false")
        if option.current_value == value:
            return False
        if config_id == AUTO_CONTINUE:
            state.set_auto_continue(value)
        else:
            state.set_auto_compact(value)
        return True
    if not isinstance(value, str):
        raise InvalidParams(f"Invalid params: value: {config_id} takes one of its value ids, not a boolean")
    allowed = [o.value for o in option.options]
    if config_id == "mode" and value in SANDBOXED_MODES and value not in allowed:
        raise InvalidParams(
            f"Invalid params: value: the {value} mode needs the sandbox, and this session's commands cannot be "
            "sandboxed (its notice says why; `coder-agent doctor` shows the sandbox)"
        )
    if value not in allowed:
        raise InvalidParams(f"Invalid params: value: {value!r} is not one of {', '.join(allowed)}")
    if option.current_value == value:
        return False
    if config_id == "mode":
        assert is_mode(value)
        state.set_mode(value)
    elif config_id == "model":
        state.set_model(value)
    elif config_id == "reasoning_effort":
        state.set_reasoning_effort(None if value == DEFAULT_EFFORT else cast(ReasoningEffort, value))
    return True
