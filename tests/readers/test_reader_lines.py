"""Launch commands, argument dumps, environment lines and environment reports -> facts."""

from __future__ import annotations

from pathlib import Path

import pytest

from kb.readers.lines import LineFacts

SAMPLES = Path(__file__).parent / "samples"


def facts_of(text: str) -> dict:
    lf = LineFacts()
    for line in text.splitlines():
        lf.feed(line)
    return lf.finish()


CASES = [
    # vllm serve command quoted in a public benchmark README (moguizhizi/learning_project
    # benchmarks/README.md); flags: https://docs.vllm.ai/en/latest/configuration/engine_args.html
    ("vllm serve /home/temp/llm_model/nm-testing/Qwen2.5-VL-72B-Instruct-quantized.w8a8 --load-format runai_streamer "
     "--tensor-parallel-size 4 --max-model-len 8192 --max-num-seqs 2048 --kv-cache auto --gpu-memory-utilization 0.5 "
     "--disable-custom-all-reduce --served-model-name qwen2_5_vl_72B_quant --disable-log-requests",
     {"inference": {"engine": "vllm", "tensor_parallel_size": 4, "max_model_len": 8192, "max_num_seqs": 2048,
                    "gpu_memory_utilization": 0.5}}),
    ("$ vllm serve Qwen/Qwen2-7B --enforce-eager --no-enable-prefix-caching --enable-chunked-prefill "
     "--max-num-batched-tokens 2048 -q awq -tp 2",
     {"inference": {"engine": "vllm", "enforce_eager": True, "enable_prefix_caching": False,
                    "enable_chunked_prefill": True, "max_num_batched_tokens": 2048, "quantization": "awq",
                    "tensor_parallel_size": 2}}),
    # SGLang server args: https://docs.sglang.ai/advanced_features/server_arguments.html
    ("python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --mem-fraction-static 0.7 "
     "--max-running-requests 64 --chunked-prefill-size -1 --disable-radix-cache --tp 2 --disable-cuda-graph",
     {"inference": {"engine": "sglang", "gpu_memory_utilization": 0.7, "max_num_seqs": 64,
                    "enable_chunked_prefill": False, "enable_prefix_caching": False, "tensor_parallel_size": 2,
                    "enforce_eager": True}}),
    # Aphrodite (a vLLM fork, vLLM's flags): "aphrodite run <model>"; its engine stays unnamed
    ("aphrodite run Qwen/Qwen2.5-Coder-7B-Instruct-AWQ --max-model-len 5000 --max-num-seqs 1 --enforce-eager -tp 2",
     {"inference": {"max_model_len": 5000, "max_num_seqs": 1, "enforce_eager": True, "tensor_parallel_size": 2}}),
    # SGLang 0.5.x turns only the decode graphs off with its own flag
    ("python -m sglang.launch_server --model-path my-model --disable-decode-cuda-graph",
     {"inference": {"engine": "sglang", "enforce_eager": True}}),
    # TGI's launcher and its image in `docker run` (flags:
    # https://huggingface.co/docs/text-generation-inference/reference/launcher); a bare flag
    # before the next one keeps no value
    ("docker run --gpus all --shm-size 1g -p 8080:80 -v $volume:/data \\\n"
     "    ghcr.io/huggingface/text-generation-inference:2.4.0 --model-id $model --num-shard 4 \\\n"
     "    --max-total-tokens 8192 --quantize gptq --cuda-graphs 0",
     {"inference": {"engine": "tgi", "tensor_parallel_size": 4, "max_model_len": 8192, "quantization": "gptq",
                    "enforce_eager": True}}),
    ("text-generation-launcher --model-id bigscience/bloom-560m --num-shard 2 --cuda-graphs 1,2,4,8",
     {"inference": {"engine": "tgi", "tensor_parallel_size": 2, "enforce_eager": None}}),
    # vLLM keeps --cpu-offload-gb of weights in host memory (engine args)
    ("vllm serve zai-org/GLM-4.5-Air --tensor-parallel-size 2 --cpu-offload-gb 16 --max-model-len 32768",
     {"inference": {"engine": "vllm", "cpu_offload_gb": 16.0, "tensor_parallel_size": 2, "max_model_len": 32768}}),
    # torchrun: https://docs.pytorch.org/docs/stable/elastic/run.html
    ("NCCL_DEBUG=INFO torchrun --nnodes=2 --nproc_per_node=8 --rdzv_endpoint=host:29500 train.py \\\n"
     "    --bf16 --dataloader_num_workers 8 --per_device_train_batch_size 4 \\\n"
     "    --gradient_accumulation_steps 16 --gradient_checkpointing",
     {"env": {"NCCL_DEBUG": "INFO"}, "distributed": {"nnodes": 2, "world_size": 16},
      "numerics": {"dtype": "bf16"}, "dataloader": {"num_workers": 8},
      "training": {"micro_batch_size": 4, "gradient_accumulation_steps": 16, "activation_checkpointing": True}}),
    # DeiT's README launch (python -m torch.distributed.launch, nnodes defaults to 1)
    ("python -m torch.distributed.launch \\\n--nproc_per_node=8 --use_env main.py \\\n--num_workers 32 \\\n"
     "--model deit_tiny_patch16_224 \\\n--batch-size 128 \\\n--data-path /data/ILSVRC2012",
     {"distributed": {"nnodes": 1, "world_size": 8}, "dataloader": {"num_workers": 32, "batch_size": 128}}),
    ("deepspeed --num_gpus 4 --num_nodes 2 train.py --zero_stage 3 --fp16",
     {"distributed": {"nnodes": 2, "world_size": 8}, "training": {"zero_stage": 3}, "numerics": {"dtype": "fp16"}}),
    ("accelerate launch --num_processes 8 --num_machines 1 --mixed_precision=bf16 train.py",
     {"distributed": {"nnodes": 1, "world_size": 8}, "numerics": {"dtype": "bf16"}}),
    # argparse dump (vLLM's api_server logs "args: Namespace(...)")
    ("INFO 11-18 18:07:20 api_server.py:585] args: Namespace(host=None, port=8000, max_model_len=4096, "
     "gpu_memory_utilization=0.9, enforce_eager=True, max_num_seqs=256, enable_prefix_caching=False, quantization=None)",
     {"inference": {"engine": "vllm", "max_model_len": 4096, "gpu_memory_utilization": 0.9, "enforce_eager": True,
                    "max_num_seqs": 256, "enable_prefix_caching": False}}),
    ("non-default args: {'model': 'Qwen/Qwen3-8B', 'enforce_eager': True, 'max_num_seqs': 8}",
     {"inference": {"enforce_eager": True, "max_num_seqs": 8}}),
    # HF Trainer prints TrainingArguments one field per line
    ("Training/evaluation parameters TrainingArguments(\n_n_gpu=1,\nbf16=False,\ndataloader_num_workers=0,\n"
     "fp16=True,\ngradient_accumulation_steps=2,\nmax_grad_norm=1.0,\n)",
     {"dataloader": {"num_workers": 0}, "numerics": {"dtype": "fp16", "grad_clip": 1.0},
      "training": {"gradient_accumulation_steps": 2}}),
    ("python train.py --precision bf16-mixed --num_workers 4",
     {"numerics": {"dtype": "bf16"}, "dataloader": {"num_workers": 4}}),
    # env lines
    ("export PYTORCH_ALLOC_CONF=expandable_segments:True\nexport NCCL_P2P_DISABLE=1\nNCCL_ALGO=Ring\n"
     "os.environ[\"CUDA_VISIBLE_DEVICES\"] = \"0,1\"",
     {"env": {"PYTORCH_ALLOC_CONF": "expandable_segments:True", "NCCL_P2P_DISABLE": "1", "NCCL_ALGO": "Ring",
              "CUDA_VISIBLE_DEVICES": "0,1"},
      "oom": {"expandable_segments": True}, "distributed": {"p2p_disabled": True, "nccl_algo": "Ring"}}),
    ("PYTORCH_CUDA_ALLOC_CONF='max_split_size_mb:128'", {"env": {"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:128"},
                                                          "oom": {"expandable_segments": False}}),
    ("docker run --gpus all -e NCCL_SOCKET_IFNAME=eth0 --env VLLM_USE_V1=0 img",
     {"env": {"NCCL_SOCKET_IFNAME": "eth0", "VLLM_USE_V1": "0"}, "distributed": {"socket_ifname": "eth0"}}),
    # bare flags, the program left out: the flags tell serving from training
    ("--max-num-seqs 1 --enforce-eager\n--gpu-memory-utilization 0.9",
     {"inference": {"max_num_seqs": 1, "enforce_eager": True, "gpu_memory_utilization": 0.9}}),
    ("  --per_device_train_batch_size 4 \\\n  --gradient_accumulation_steps 8 --bf16",
     {"training": {"micro_batch_size": 4, "gradient_accumulation_steps": 8}, "numerics": {"dtype": "bf16"}}),
    # the model's name states its size and format: a flag's value, `vllm serve <model>`
    # (https://docs.vllm.ai/en/latest/cli/serve.html), a path
    ("CUDA_VISIBLE_DEVICES=0,1,2,3 python3 -m vllm.entrypoints.openai.api_server --dtype bfloat16 "
     "--model /home/models/CodeLlama-13b-hf/ --tensor-parallel-size=4",
     {"training": {"model_params_billion": 13.0}, "numerics": {"dtype": "bf16"},
      "inference": {"tensor_parallel_size": 4}}),
    ("vllm serve Qwen/Qwen2.5-14B-Instruct-AWQ -tp 2",
     {"training": {"model_params_billion": 14.0, "weight_bits": 4}, "inference": {"tensor_parallel_size": 2}}),
    # the load generator's own cap (vllm bench serve --max-concurrency, docs.vllm.ai benchmarking/cli)
    ("vllm bench serve --model my-model --dataset-name random --num-prompts 20 --max-concurrency 4",
     {"inference": {"client_max_concurrency": 4}}),
    # LMDeploy's server (https://lmdeploy.readthedocs.io, `lmdeploy serve api_server <model> --tp N`)
    ("CUDA_VISIBLE_DEVICES=0,9 lmdeploy serve api_server /root/models/THUDM/glm-4v-9b/ --model-name glm-4v-9b --tp 2",
     {"inference": {"engine": "lmdeploy", "tensor_parallel_size": 2}, "training": {"model_params_billion": 9.0}}),
    # llama.cpp's server (tools/server/README.md): -m, -np/--parallel, -sm/--split-mode, -ngl
    ('"C:\\llama.cpp\\llama-server.exe" -m ".\\models\\Qwen3-30B-A3B-Q4_K_M.gguf" -np 4 -c 20480 -ngl 999 -sm none',
     {"inference": {"engine": "llama.cpp", "max_num_seqs": 4, "gpus_per_replica": 1},
      "training": {"model_params_billion": 30.0, "weight_bits": 4}}),
    ("./llama-server -m models/llama-2-7b.Q5_K_M.gguf -ngl 0",
     {"inference": {"engine": "llama.cpp", "gpu_model_share": 0.0},
      "training": {"model_params_billion": 7.0, "weight_bits": 5}}),
    ("ollama run llama3:70b", {"inference": {"engine": "ollama"}, "training": {"model_params_billion": 70.0}}),
    # FastChat's workers (lm-sys/FastChat fastchat/serve/vllm_worker.py: "if args.num_gpus > 1:
    # args.tensor_parallel_size = args.num_gpus"; model_worker.py spreads the layers instead)
    ("python3 -m fastchat.serve.vllm_worker --model-path /app/weights/vicuna-13b-v1.5 --num-gpus 2",
     {"inference": {"engine": "vllm", "tensor_parallel_size": 2}, "training": {"model_params_billion": 13.0}}),
    ("python3 -m fastchat.serve.model_worker --model-path lmsys/vicuna-7b-v1.5 --num-gpus=2 --gpus=0,1",
     {"inference": {"engine": "transformers", "gpus_per_replica": 2}, "training": {"model_params_billion": 7.0}}),
    # the engine's class named through its module
    ('llm = vllm.LLM(model="facebook/opt-13b", tensor_parallel_size=4)',
     {"inference": {"tensor_parallel_size": 4}, "training": {"model_params_billion": 13.0}}),
    # vLLM's offline engine (docs: "LLM(model=..., tensor_parallel_size=4)"), one line or one
    # keyword per line; TensorRT-LLM's LLM API takes the same keywords
    ('llm = LLM(model="meta-llama/Llama-2-70b-hf", tensor_parallel_size=4, enforce_eager=True)',
     {"training": {"model_params_billion": 70.0},
      "inference": {"tensor_parallel_size": 4, "enforce_eager": True}}),
    ('vllm = LLM(\n    model="mosaicml/mpt-7b-instruct",\n    trust_remote_code=True,\n    dtype="float16",\n'
     '    tensor_parallel_size=2,\n    gpu_memory_utilization=.95,\n)',
     {"training": {"model_params_billion": 7.0}, "numerics": {"dtype": "fp16"},
      "inference": {"tensor_parallel_size": 2, "gpu_memory_utilization": 0.95}}),
    # ibv_devinfo (rdma-core devinfo.c) on a RoCE bond, and ibstat (infiniband-diags)
    ("hca_id:\tmlx5_bond_0\n\ttransport:\t\t\tInfiniBand (0)\n\t\tport:\t1\n"
     "\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n\t\t\tlink_layer:\t\tEthernet",
     {"distributed": {"ib_link_layer": "ethernet"}}),
    ("CA 'mlx5_0'\n\tPort 1:\n\t\tState: Active\n\t\tLink layer: InfiniBand",
     {"distributed": {"ib_link_layer": "infiniband"}}),
    # trtllm-serve's options (TensorRT-LLM docs, "trtllm-serve"): --tp_size, --max_seq_len
    ("trtllm-serve meta-llama/Llama-3.1-8B-Instruct --tp_size 2 --max_seq_len 4096",
     {"inference": {"engine": "tensorrt-llm", "tensor_parallel_size": 2, "max_model_len": 4096},
      "training": {"model_params_billion": 8.0}}),
    # SGLang's `sglang serve` entry point takes the launch_server flags
    ("sglang serve --model-path Qwen/Qwen2.5-7B-Instruct --tp 2 --disable-radix-cache",
     {"inference": {"engine": "sglang", "tensor_parallel_size": 2, "enable_prefix_caching": False}}),
    # Aphrodite's OpenAI server module: vLLM's flags, its engine left unnamed
    ("python -m aphrodite.endpoints.openai.api_server --model my-model -tp 2 --enforce-eager",
     {"inference": {"tensor_parallel_size": 2, "enforce_eager": True, "engine": None}}),
    # torchtune wraps torchrun: `tune run --nproc_per_node 4 <recipe>` (one node by default)
    ("tune run --nproc_per_node 4 lora_finetune_distributed --config llama3_1/8B_lora",
     {"distributed": {"nnodes": 1, "world_size": 4}}),
    # procps-ng uptime (this machine, 2026-12-05) and top's first line: the 1-minute load average
    (" 17:00:47 up  3:35,  0 user,  load average: 0.22, 0.71, 0.92",
     {"cpu": {"load_average": 0.22}}),
    ("top - 11:02:13 up 12 days,  3:35,  2 users,  load average: 388.12, 371.40, 290.77\n"
     "Tasks: 812 total,   9 running, 803 sleeping,   0 stopped,   0 zombie",
     {"cpu": {"load_average": 388.12}}),
    # two snapshots: the busiest one; a locale with decimal commas; BSD/macOS uptime
    ("load average: 12.50, 10.00, 9.00\nload average: 40.25, 20.00, 10.00\nload average: 30.00, 29.00, 28.00",
     {"cpu": {"load_average": 40.25}}),
    (" 10:01:02 up 1 day,  1 user,  load average: 0,52, 0,58, 0,59", {"cpu": {"load_average": 0.52}}),
    ("10:01  up 3 days, 22:41, 2 users, load averages: 2.15 2.01 1.96", {"cpu": {"load_average": 2.15}}),
    # util-linux lscpu (this machine), and its line inside collect_env's "CPU:" section
    ("CPU(s):                                  2\nOn-line CPU(s) list:                     0,1\n"
     "NUMA node0 CPU(s):                       0,1", {"cpu": {"cores": 2}}),
    # OMP_NUM_THREADS before a launch: each process's intra-op pool
    ("OMP_NUM_THREADS=64 torchrun --nproc_per_node 8 train.py",
     {"cpu": {"omp_threads": 64}, "distributed": {"world_size": 8, "nnodes": 1}}),
    ("export OMP_NUM_THREADS=4", {"cpu": {"omp_threads": 4}}),
    # Ollama's parallel slots per model (docs/faq.mdx, "How does Ollama handle concurrent
    # requests?"), before the command and in the systemd unit the FAQ edits
    ("OLLAMA_NUM_PARALLEL=1 ollama serve", {"inference": {"max_num_seqs": 1, "engine": "ollama"}}),
    ('[Service]\nEnvironment="OLLAMA_NUM_PARALLEL=4"', {"inference": {"max_num_seqs": 4, "engine": "ollama"}}),
    # LLaMA-Factory's trainer CLI: a training job (its cutoff_len is the training length)
    ("llamafactory-cli train --cutoff_len 4096 --per_device_train_batch_size 2 --bf16",
     {"training": {"seq_len": 4096, "micro_batch_size": 2}, "numerics": {"dtype": "bf16"}}),
]


def test_every_launcher_has_a_case() -> None:
    # one row per program (kb.readers.args.LAUNCHERS / MODULES): each is read by a case above
    from kb.readers import args

    read = set()
    for text, _ in CASES:
        m = args.LAUNCH.search(text.replace("\\\n", " "))
        if m and (launcher := args.launcher_of(m)) is not None:
            read.add(launcher)
    assert [x.program for x in args.LAUNCHERS + args.MODULES if x not in read] == []


@pytest.mark.parametrize(("text", "want"), CASES)
def test_lines_give_facts(text: str, want: dict) -> None:
    got = facts_of(text)
    for group, values in want.items():
        for key, value in values.items():
            assert got.get(group, {}).get(key) == value, f"{group}.{key}: {got}"


def test_other_ollama_settings_state_no_slots() -> None:
    # near-misses: the variable in a sentence, another variable of the server, no number
    for text in ("try OLLAMA_NUM_PARALLEL=4 next time.", 'Environment="OLLAMA_HOST=0.0.0.0:11434"',
                 "OLLAMA_NUM_PARALLEL=auto ollama serve"):
        assert "max_num_seqs" not in facts_of(text).get("inference", {}), text


@pytest.mark.parametrize("text", [
    "our torchrun job hangs at init on two nodes",
    "deepspeed zero3 runs out of host memory",
])
def test_a_launcher_named_in_a_sentence_is_no_command(text: str) -> None:
    # torchrun's default of one node must not come from a sentence that names torchrun
    assert "distributed" not in facts_of(text)


def test_a_model_named_like_a_runner_names_no_runner() -> None:
    # Aphrodite serving a llama-2 checkpoint: "llama-" in the model's name is not llama.cpp
    got = facts_of("aphrodite run TheBloke/llama-2-7b --tensor-parallel-size 2")
    assert "engine" not in got.get("inference", {})
    assert got["inference"]["tensor_parallel_size"] == 2


def test_a_comparison_of_two_settings_states_neither() -> None:
    # the same engine built twice, tensor_parallel_size=1 then =2 (vllm-project/vllm#689):
    # which one ran is not known, so neither value is a fact; what both share stays
    got = facts_of('llm = LLM(model="mosaicml/mpt-7b-instruct", tensor_parallel_size=1)\n'
                   'llm = LLM(model="mosaicml/mpt-7b-instruct", tensor_parallel_size=2)')
    assert "tensor_parallel_size" not in got.get("inference", {})
    assert got["training"]["model_params_billion"] == 7.0


@pytest.mark.parametrize("text", [
    # advice inside a message is not the user's environment
    "[1/64] To log all recompilation reasons, use TORCH_LOGS=\"recompiles\".",
    # credentials are never read, even under a kept prefix
    "export HF_TOKEN=hf_abc\nexport WANDB_API_KEY=123\nexport VLLM_API_KEY=secret",
    # a traceback frame names python files but is not a command
    '  File "/usr/lib/python3.10/runpy.py", line 196, in _run_module_as_main',
    # not flags: torch.multiprocessing's banner, a markdown rule, a negative number
    "-- Process 1 terminated with the following error:\n---\nloss: --1",
    # another library's class whose name ends in LLM: not an engine's arguments
    "chain = ChainLLM(temperature=0.1, tensor_parallel_size=2)",
    # lscpu's other CPU(s) lines (a list, a NUMA node's cores); a load average named in prose
    "On-line CPU(s) list:                     0-95\nNUMA node0 CPU(s):   0-23,48-71",
    "the load average was high all day",
])
def test_lines_that_state_nothing(text: str) -> None:
    assert facts_of(text) == {}


def test_collect_env_report() -> None:
    # https://github.com/pytorch/pytorch/issues/108650 (samples/README.md)
    got = facts_of((SAMPLES / "collect_env_torch21.txt").read_text())
    assert got["software"]["torch_version"] == "2.1.0.dev20230903+cu121"
    assert got["software"]["torch_cuda_version"] == "12.1"
    assert got["software"]["python_version"] == "3.10.12"
    assert got["gpu"] == {"driver_version": "535.104.05", "name": "NVIDIA L4", "count": 1}
    assert "cuda_runtime_version" not in got["software"]  # "Could not collect"


def test_collect_env_gpu_list() -> None:
    got = facts_of((SAMPLES / "collect_env_multi_gpu.txt").read_text())
    assert got["gpu"]["name"] == "GeForce GTX 1080 Ti" and got["gpu"]["count"] == 4
    assert got["software"]["torch_cuda_version"] == "10.2"


def test_lightning_env_report() -> None:
    got = facts_of((SAMPLES / "lightning_env.txt").read_text())
    assert got["gpu"] == {"name": "NVIDIA H100 80GB HBM3", "count": 8}
    assert got["software"]["torch_version"] == "2.1.1+cu118"
    assert got["software"]["packages"] == {"lightning": "2.1.2", "torch": "2.1.1+cu118"}


@pytest.mark.parametrize(("text", "name"), [
    # hand-written environment lists as issue templates ask for them (faster-whisper#310's
    # "GPU: GTX 1660 Ti 6GB", a vLLM report's "GPU: NVIDIA GeForce RTX 3090 24 GB")
    ("Kernel: Linux 5.19.0-45\nGPU: GTX 1660 Ti 6GB\n", "GTX 1660 Ti"),
    ("GPU: NVIDIA GeForce RTX 3090 24 GB", "RTX 3090"),
    ("GPU: 2x V100", "V100"),
    ("显卡：RTX 4090", "RTX 4090"),
    # near-misses: no product of the table, a count, two products (a table of machines tried)
    ("GPU: 0", None),
    ("* Num GPU: 4", None),
    ("GPU: yes (CUDA 12.1)", None),
    ("✅ GPU: L40     Driver Version: 525.116.04\n❌ GPU: 2x4090  Driver Version: 545.29.06", None),
    ("GPUs: RTX 5060 Ti (16GB, primary) + RTX 3060 (12GB, secondary)", None),
])
def test_a_hand_written_gpu_line_names_the_card(text: str, name: str | None) -> None:
    assert facts_of(text).get("gpu", {}).get("name") == name


@pytest.mark.parametrize("text", [
    # a hand-written bullet list: the GPU on the same line, the next bullet at the same depth
    "- GPU:  Quadro RTX 6000\n- wandb, version 0.10.31\n",
    "- GPU:\n- Backend: Flower\n- OS: Ubuntu\n",
])
def test_bullet_lists_are_no_lightning_gpu_list(text: str) -> None:
    assert "count" not in facts_of(text).get("gpu", {})


def test_pip_and_hf_env_lists() -> None:
    text = ("[pip3] nvidia-nccl-cu12==2.21.5\n[conda] torch 2.4.0 py3.10_cuda12.1 pytorch\n"
            "- `transformers` version: 4.36.2\n- PyTorch version (GPU?): 2.1.2+cu121 (True)\n"
            "vllm                          0.2.7\nvLLM Version: 0.6.4.post1\n")
    got = facts_of(text)
    assert got["software"]["packages"] == {"nccl": "2.21.5", "torch": "2.4.0", "transformers": "4.36.2",
                                           "vllm": "0.2.7"}
    assert got["software"]["torch_version"] == "2.1.2+cu121"


def test_vllm_v1_engine_config_line() -> None:
    got = facts_of((SAMPLES / "vllm_v1_engine.log").read_text())
    # speculative_config=None: no speculative decoding
    assert got["inference"] == {"engine": "vllm", "max_model_len": 16384, "tensor_parallel_size": 1,
                                "speculative": False}


def test_mixed_link_layers_say_nothing() -> None:
    # an IB port for the job and an Ethernet one for storage: which NCCL uses is not told here
    text = "\t\t\tlink_layer:\t\tInfiniBand\n\t\t\tlink_layer:\t\tEthernet\n"
    assert "distributed" not in facts_of(text)


@pytest.mark.parametrize(("text", "want"), [
    # a checkpoint's config.json saved after a gradient-checkpointed run, YAML, a generate() call
    ('{\n  "architectures": ["LlamaForCausalLM"],\n  "use_cache": false,\n  "vocab_size": 32000\n}', False),
    ("model:\n  use_cache: true\n", True),
    ("out = model.generate(input_ids, max_new_tokens=64, use_cache=False)", False),
    # near-misses: the word in a sentence, another field
    ("why is use_cache disabled here?", None),
    ('  "use_cache_quantization": false,', None),
])
def test_use_cache(text: str, want: bool | None) -> None:
    assert facts_of(text).get("inference", {}).get("use_cache") == want


@pytest.mark.parametrize(("text", "want"), [
    ("model = torch.nn.DataParallel(model)", True),
    ("net = nn.DataParallel(net, device_ids=[0, 1, 2, 3])", True),
    ("model = torch.nn.parallel.DataParallel(model).cuda()", True),
    # near-misses: DDP, and a subclass of another name
    ("model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[rank])", None),
    ("self.model = CustomDataParallel(model)", None),
])
def test_data_parallel_in_code(text: str, want: bool | None) -> None:
    assert facts_of(text).get("distributed", {}).get("single_process_multi_gpu") == want


# a DataLoader's worker count: torch.utils.data.DataLoader(num_workers=0 by default,
# https://docs.pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader)
@pytest.mark.parametrize(("text", "want"), [
    ("        batch_size=batch_size, num_workers=8, pin_memory=True, shuffle=True)", 8),
    ("num_workers: 20", 20),
    ("datamodule:\n  num_workers: 0", 0),
    ("dataloader_num_workers = 12", 12),
    # a DataLoader built on one line without num_workers loads in the training process
    ("loader = torch.utils.data.DataLoader(subjects, batch_size=8, shuffle=True)", 0),
    ("x = DataLoader(ds, batch_size=4)  # then iterate", 0),
    # near-misses: another pool's workers, keywords passed on, a call not closed on its line,
    # a line whose parentheses say the call is not the whole of it, a worker count in words
    ("preprocessing_num_workers==48", None),
    ("loader = DataLoader(ds, **loader_kwargs)", None),
    ("train_loader = torch.utils.data.DataLoader(train_data,", None),
    ("trainer.fit(model, DataLoader(train), DataLoader(val))", None),
    ("the DataLoader(ds) with num_workers 4 is slow", None),
])
def test_data_loader_workers_in_code(text: str, want: int | None) -> None:
    assert facts_of(text).get("dataloader", {}).get("num_workers") == want


def test_worker_counts_in_words_are_not_the_jobs() -> None:
    # words weigh worker counts against each other ("num_workers=0 works, num_workers > 0
    # runs out of memory"): the count is read from artifacts only
    from kb.symptom_text import extract

    text = "With `num_workers=0` it is fine but slow; with more workers the RAM grows until it is killed"
    assert "num_workers" not in extract(text).get("dataloader", {})


# a framework's memory pool, from its variables (https://docs.jax.dev/en/latest/gpu_memory_allocation.html,
# TensorFlow's TF_FORCE_GPU_ALLOW_GROWTH) and from XLA's own allocator line
# (xla/pjrt/gpu/gpu_helpers.cc: "allocating" when it preallocates, "will use up to" when not)
@pytest.mark.parametrize(("text", "want"), [
    ("export XLA_PYTHON_CLIENT_MEM_FRACTION=.50", {"framework_preallocates": True, "pool_fraction": 0.5}),
    ("XLA_CLIENT_MEM_FRACTION=0.9 python train.py", {"framework_preallocates": True, "pool_fraction": 0.9}),
    ('os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"', {"framework_preallocates": False}),
    ("export XLA_PYTHON_CLIENT_MEM_FRACTION=.9\nexport XLA_PYTHON_CLIENT_PREALLOCATE=false",
     {"framework_preallocates": False}),
    ("XLA_PYTHON_CLIENT_ALLOCATOR=platform python run.py", {"framework_preallocates": False}),
    ("export TF_FORCE_GPU_ALLOW_GROWTH=true", {"framework_preallocates": False}),
    ("I0000 00:00:1745543868.274817 1243516 gpu_helpers.cc:136] XLA backend allocating 3825205248 bytes on "
     "device 0 for BFCAllocator.", {"framework_preallocates": True}),
    ("2021-08-13 11:12:50.38: I external/org_tensorflow/tensorflow/compiler/xla/pjrt/gpu_device.cc:171] "
     "XLA backend will use up to 7876018176 bytes on device 0 for BFCAllocator.", {"framework_preallocates": False}),
    # near-misses: the collectives' pool says nothing of the main one; a fraction above 1 is
    # unified memory spilling to the host (AlphaFold's 4.0), not a pool on the card
    ("I0000 00:00:1745543868.275204 1243516 gpu_helpers.cc:177] XLA backend will use up to 1275068416 bytes "
     "on device 0 for CollectiveBFCAllocator.", {}),
    ("export XLA_PYTHON_CLIENT_MEM_FRACTION=4.0", {}),
    ("export TF_FORCE_GPU_ALLOW_GROWTH=false", {}),
])
def test_a_frameworks_memory_pool(text: str, want: dict) -> None:
    # a near-miss states nothing of memory at all (no empty group either)
    assert facts_of(text).get("oom") == (want or None)


# the job's operating system: collect_env's OS field, or a Windows path in a traceback or a
# launch line
@pytest.mark.parametrize(("text", "want"), [
    ("OS: Microsoft Windows 11 Pro (10.0.22631 64-bit)", True),
    ("OS: Ubuntu 22.04.4 LTS (x86_64)", False),
    (r'  File "C:\Users\me\anaconda3\envs\sd\lib\site-packages\torch\nn\modules\module.py", line 1501, in _call_impl',
     True),
    (r"D:\ComfyUI_windows_portable\python_embeded\python.exe -s ComfyUI\main.py --windows-standalone-build", True),
    # near-misses: a POSIX path, and a colon before a backslash in prose
    ('  File "/usr/lib/python3/dist-packages/torch/nn/modules/module.py", line 1501, in _call_impl', None),
    (r"ratio 3:\n of the runs", None),
])
def test_the_jobs_operating_system(text: str, want: bool | None) -> None:
    assert facts_of(text).get("software", {}).get("windows") is want
