"""The experiment configuration: one validated pydantic object from the web form to ``train(config)``.

Field names follow TRL's ``GRPOConfig`` wherever the concept is the same (``num_generations``,
``max_completion_length``, ``epsilon_high``, ``loss_type``, ``scale_rewards`` ...), so TRL users feel at
home. Every field documents its unit, default and the paper it comes from; the JSON schema of this model
(``rlvr config-schema``) is what the web form is generated from.

Sections that choose no method live in sections.py, those that do in method_sections.py. The checks here
are the ones that span sections; each method's own checks (what it needs from the rest of the config) are
registered with the method and run for every method the config chose (``_check_methods``).
"""

from __future__ import annotations

import string

from pydantic import Field, model_validator

from trainer.bounds import MAX_NAME_CHARS, MAX_SEED
from trainer.config.environment import EnvironmentConfig
from trainer.config.method_sections import (
    AlgorithmConfig,
    RolloutBudgetConfig,
    ShapingConfig,
    TeacherConfig,
    chosen_methods,
)
from trainer.config.process_reward import ProcessRewardConfig
from trainer.config.reward_absence import RewardAbsenceConfig
from trainer.config.reward_watch import RewardWatchConfig, WatchedKeys, resolve_watch
from trainer.config.sections import (
    CheckpointConfig,
    DataConfig,
    EvaluationConfig,
    ModelConfig,
    RolloutConfig,
    TrainingConfig,
    VerifierSpec,
    _Section,
)
from trainer.errors import RLVRError
from trainer.evaluation.suite import resolve_training_benchmarks
from trainer.methods.axes import ActiveMethod
from trainer.methods.shaping import REWARD_SHAPING
from trainer.rubrics.config import RubricConfig
from trainer.verifiers import VERIFIERS, build_verifier


class ExperimentConfig(_Section):
    """Everything one training run needs. YAML and JSON files load into it (`load_config`)."""

    name: str = Field("experiment", max_length=MAX_NAME_CHARS, description="Human-readable run name.")
    seed: int = Field(
        0, ge=0, le=MAX_SEED, description="Seed for sampling prompts and completions and for initialisation."
    )
    model: ModelConfig = Field(default_factory=ModelConfig)
    data: DataConfig = Field(default_factory=DataConfig)
    rollout: RolloutConfig = Field(default_factory=RolloutConfig)
    verifiers: list[VerifierSpec] = Field(
        default_factory=lambda: [VerifierSpec(name="exact")],
        max_length=64,
        description="Reward functions; rewards are combined with algorithm.reward_weights.",
    )
    algorithm: AlgorithmConfig = Field(default_factory=AlgorithmConfig)
    training: TrainingConfig = Field(default_factory=TrainingConfig)
    checkpoint: CheckpointConfig = Field(default_factory=CheckpointConfig)
    evaluation: EvaluationConfig = Field(default_factory=EvaluationConfig)
    shaping: ShapingConfig = Field(default_factory=ShapingConfig)
    budget: RolloutBudgetConfig = Field(default_factory=RolloutBudgetConfig)
    teacher: TeacherConfig = Field(default_factory=TeacherConfig)
    rubric: RubricConfig | None = Field(
        None,
        description="A rubric as an extra reward (trainer/rubrics/): criteria scored by rules or an LLM judge, "
        "aggregated by 'weighted_sum' or 'rank' (RLVR^2) and added to the verifiers' "
        "total with rubric.reward_weight; null: no rubric.",
    )
    reward_watch: RewardWatchConfig = Field(
        default_factory=RewardWatchConfig,
        description="Watching for reward hacking: a learned reward (reward_model or judge) against a programmatic "
        "verifier listed with weight 0 on the same rollouts; flags the step where the first keeps rising while the "
        "second falls (Gao et al., 'Scaling Laws for Reward Model Overoptimization').",
    )
    process_reward: ProcessRewardConfig | None = Field(
        None,
        description="Process rewards: each completion split into steps, each step scored (the chain task's step "
        "check, a process reward model, or Math-Shepherd's Monte-Carlo values) and the scores turned into token "
        "credit; null: outcome rewards only.",
    )
    environment: EnvironmentConfig | None = Field(
        None,
        description="Multi-turn episodes instead of one completion per prompt: the model's turns, tool calls run "
        "under deadlines, the environment's replies, token-in token-out (model tokens trained, the environment's "
        "masked out of the loss); each episode's reward is its environment's final score. Null: single-turn.",
    )
    reward_absence: RewardAbsenceConfig = Field(
        default_factory=RewardAbsenceConfig,
        description="What a reward source's absent score (a failed or unparseable reward model or judge call, "
        "never counted as 0 silently) means: drop the sample from its group's statistics, score it 0, or fail the "
        "run past a threshold.",
    )

    def methods(self) -> list[ActiveMethod]:
        """Every method this config chose, with its validated params, in config order."""
        return [choice.active() for choice in chosen_methods(self)]

    @property
    def seeds_per_prompt(self) -> bool:
        """Whether each group samples with its own generator (rollout.seed_per_prompt; null: with num_processes > 1)."""
        chosen = self.rollout.seed_per_prompt
        return self.world_size > 1 if chosen is None else chosen

    @property
    def world_size(self) -> int:
        """Processes over all nodes (training.num_nodes x training.num_processes): the data-parallel group."""
        return self.training.num_nodes * self.training.num_processes

    @model_validator(mode="after")
    def _check_methods(self) -> ExperimentConfig:
        """Each chosen method's own checks (registered with it): what it needs from the rest of the config."""
        for choice in chosen_methods(self):
            method = choice.active()
            for check in method.entry.checks:
                check(self, method.params)
        return self

    @property
    def watched_rewards(self) -> WatchedKeys | None:
        """The learned reward and the monitor verifier reward_watch compares (trainer/config/reward_watch.py)."""
        sources = [(v.name, v.key) for v in self.verifiers]
        return resolve_watch(self.reward_watch, sources, self.reward_weights)

    @model_validator(mode="after")
    def _check_reward_watch(self) -> ExperimentConfig:
        self.watched_rewards  # noqa: B018 -- a named key that is no verifier's fails here, at submit time
        return self

    @property
    def source_weights(self) -> dict[str, float]:
        """Reward key -> weight of every source in the total: the verifiers', and an environment's final score."""
        weights = dict(zip((v.key for v in self.verifiers), self.reward_weights, strict=True))
        if (
            self.environment is not None
        ):  # the verifiers score inside the environment; its score is the reward
            weights = {"environment": 1.0}
        return weights

    @model_validator(mode="after")
    def _check_environment(self) -> ExperimentConfig:
        """What multi-turn episodes cannot be combined with yet, each refused with what to change."""
        if self.environment is None:
            return self
        for section in ("rubric", "process_reward"):
            if getattr(self, section) is not None:
                raise ValueError(
                    f"environment: {section} scores one completion's text, not an episode: remove the {section} "
                    "section (score turns with the environment, e.g. self_correction, and environment.turn_credit)"
                )
        return self

    @model_validator(mode="after")
    def _check_rubric(self) -> ExperimentConfig:
        if self.rubric is None:
            return self
        clashing = [v.key for v in self.verifiers if v.key == "rubric" or v.key.startswith("rubric/")]
        if clashing:
            raise ValueError(
                f"verifier label(s) {clashing} clash with the rubric's reward keys: relabel them"
            )
        if self.rubric.uses_judge and self.rollout.engine != "hf":
            raise ValueError("rubric judge criteria run through the 'hf' engine: set rollout.engine to 'hf'")
        return self

    @model_validator(mode="after")
    def _check_verifiers(self) -> ExperimentConfig:
        if not self.verifiers:
            raise ValueError("verifiers is empty: add at least one, e.g. {name: exact}")
        keys = [v.key for v in self.verifiers]
        if len(set(keys)) != len(keys):
            raise ValueError(f"verifier labels must be unique, got {keys}: set 'label' to tell them apart")
        for spec in self.verifiers:
            if spec.name not in VERIFIERS:
                raise ValueError(f"verifier {spec.name!r} is unknown; valid: {', '.join(VERIFIERS.names())}")
            build_verifier(spec.name, spec.params)  # bad params fail here, when the form is submitted
        alg = self.algorithm
        if alg.reward_weights is not None and len(alg.reward_weights) != len(self.verifiers):
            raise ValueError(
                f"algorithm.reward_weights has {len(alg.reward_weights)} entries but there are "
                f"{len(self.verifiers)} verifiers: give one weight per verifier"
            )
        shaped_keys = set(REWARD_SHAPING.names())  # each shaping term is a reward key of its own
        clash = shaped_keys.intersection(keys)
        if clash:
            raise ValueError(
                f"verifier label(s) {sorted(clash)} are reserved for shaping terms in the reward breakdown: "
                "give the verifier another label"
            )
        names = [c.name for c in self.shaping.reward_shaping]
        if len(set(names)) != len(names):
            raise ValueError(f"shaping.reward_shaping lists a method twice ({names}): each term once")
        return self

    @model_validator(mode="after")
    def _check_teacher(self) -> ExperimentConfig:
        """Teacher settings that cannot work (trainer/step/teacher.py)."""
        t = self.teacher
        if t.mode == "self" and t.name_or_path is not None:
            raise ValueError(
                "teacher.mode 'self' uses the policy as its own teacher (OPSD): remove teacher.name_or_path, "
                "or set mode 'external' to distil from that model"
            )
        if t.mode == "self":
            if "{answer}" not in t.privileged_template:
                raise ValueError(
                    "teacher.privileged_template must contain '{answer}': OPSD's teacher is the policy shown the "
                    "reference answer; without it teacher and student are the same and every gap is 0"
                )
            if self.data.source == "file" and self.data.answer_field is None:
                raise ValueError("teacher.mode 'self' (OPSD) needs reference answers: set data.answer_field")
        try:  # plain {prompt} / {answer} only: '{prompt.__class__}' would read Python internals (shared web app)
            fields = {
                name for _, name, _, _ in string.Formatter().parse(t.privileged_template) if name is not None
            }
        except ValueError as err:
            fields = {f"({err})"}
        if not fields <= {"prompt", "answer"}:
            raise ValueError(
                f"teacher.privileged_template is not a valid format string (fields {sorted(fields)}): use only "
                "{prompt} and {answer}, and double literal braces as {{ }}"
            )
        return self

    @model_validator(mode="after")
    def _check_distributed(self) -> ExperimentConfig:
        """Data-parallel runs: the batch must split evenly, and what cannot give the 1-process result across
        processes is refused, with why (tests/trainer/test_mode_matrix.py runs everything else both ways)."""
        if self.training.fsdp:
            self._check_fsdp()
        if self.world_size == 1:
            return self
        P = self.training.prompts_per_step
        if P % self.world_size:
            raise ValueError(self._split_message(P))
        t = self.training  # the refusals below hold for processes on one host and across hosts alike
        n = f"{t.num_processes}" if t.num_nodes == 1 else f"{t.num_processes} on {t.num_nodes} nodes"
        if self.rollout.seed_per_prompt is False:
            raise ValueError(
                f"rollout.seed_per_prompt false with training.num_processes {n}: a data-parallel run seeds each group "
                "by its global index so that it samples what one process would; set seed_per_prompt true or null"
            )
        refused = [what for what, used in self._step_wide_features() if used]
        if refused:
            raise ValueError(f"training.num_processes {n} does not support {'; '.join(refused)}")
        return self

    def _split_message(self, prompts: int) -> str:
        """Why prompts_per_step does not split, naming the product when the run spans nodes."""
        t = self.training
        if t.num_nodes == 1:
            return (
                f"training.prompts_per_step ({prompts}) must be divisible by training.num_processes "
                f"({t.num_processes}): each process trains on an equal share of the groups"
            )
        return (
            f"training.prompts_per_step ({prompts}) must be divisible by training.num_nodes x "
            f"training.num_processes ({t.num_nodes} x {t.num_processes} = {self.world_size}): each process on "
            "every node trains on an equal share of the groups"
        )

    def _step_wide_features(self) -> list[tuple[str, bool]]:
        """Features outside the method axes that cannot run across processes (yet), each with why and the way out;
        the method axes refuse their own (each method's checks)."""
        judge = self.rubric.judge_model if self.rubric is not None and self.rubric.uses_judge else None
        return [
            (
                "rollout.engine 'vllm' with vllm_mode 'colocated' (vLLM would set up its own torch.distributed group "
                "inside each process): use vllm_mode 'server', which gives every process its own rollout server",
                self.rollout.engine == "vllm" and self.rollout.vllm_mode == "colocated",
            ),
            (
                "training.max_off_policy_steps > 0 with rollout.engine 'vllm' (its background generator is a thread "
                "of the training process, whose collection collectives would run beside the update's): use the hf "
                "engine, whose generators are processes with a process group of their own, or num_processes 1",
                self.training.max_off_policy_steps > 0 and self.rollout.engine == "vllm",
            ),
            (
                "a sampling rubric judge (rubric.judge_model.top_k above 1 or 0: the judge samples one random stream over "
                "each generation call's verdicts, so they would depend on how the step is split over processes): use "
                "top_k 1 (greedy, the default) or num_processes 1",
                judge is not None and judge.top_k != 1,
            ),
        ]

    def _check_fsdp(self) -> None:
        """training.fsdp (trainer/distributed/fsdp.py) shards over processes and handles full (non-LoRA) hf-engine models."""
        if self.training.num_processes < 2:
            raise ValueError(
                "training.fsdp shards the model over processes: set training.num_processes to 2 or more "
                "(one per GPU), or turn fsdp off"
            )
        if self.model.lora_r > 0:
            raise ValueError(
                "training.fsdp with model.lora_r > 0 is not supported yet: use LoRA without fsdp, or fsdp without LoRA"
            )
        if self.training.max_off_policy_steps > 0:
            raise ValueError(
                "training.fsdp with training.max_off_policy_steps > 0 is not supported: the background generator "
                "samples with a whole copy of the policy on every process, which is what fsdp is there to avoid (a "
                "model that fits whole beside its trainer needs no fsdp); turn one off"
            )
        if self.rollout.engine == "vllm":
            raise ValueError(
                "training.fsdp with rollout.engine 'vllm' is not supported (vLLM holds its own whole copy of the "
                "weights): use rollout.engine 'hf' with fsdp, or vllm without fsdp"
            )

    @model_validator(mode="after")
    def _check_evaluation(self) -> ExperimentConfig:
        """Every periodic-evaluation benchmark must resolve now, not at the first eval step."""
        ev = self.evaluation
        if ev.enabled and not ev.benchmarks:
            which = "eval_every" if ev.eval_every else "eval_at_start" if ev.eval_at_start else "eval_at_end"
            raise ValueError(
                f"evaluation.{which} is set but evaluation.benchmarks is empty: add e.g. 'builtin:addition'"
            )
        if ev.enabled:
            try:
                resolve_training_benchmarks(ev)  # unknown names, missing files, bad fields: at submit time
            except RLVRError as err:
                raise ValueError(f"evaluation.benchmarks: {err}") from None
        return self

    @property
    def completions_per_step(self) -> int:
        return self.training.prompts_per_step * self.rollout.num_generations

    @property
    def reward_weights(self) -> list[float]:
        return self.algorithm.reward_weights or [1.0] * len(self.verifiers)
