//! The OOM doctor against real error texts from public bug reports (`tests/data/error-corpus.jsonl`, each
//! with its source URL): every case must get its labelled kind, and every labelled figure must be extracted.
#![cfg(not(target_arch = "wasm32"))]

use serde_json::Value;
use vramfit::doctor::{diagnose, Kind};

fn kind_id(k: Kind) -> &'static str {
    match k {
        Kind::Gpu => "gpu",
        Kind::Host => "host",
        Kind::Disk => "disk",
        Kind::NotMemory => "not-memory",
        Kind::Unrecognised => "unrecognised",
    }
}

/// Texts the doctor answers "unrecognised" although their thread knew the cause: nothing in the pasted text
/// itself is decisive, and a rule for them would be a guess. Each stays in the corpus, with why.
const KNOWN_MISSES: &[(&str, &str)] = &[
    ("b-vllm-qanything-302", "only \"# GPU blocks: 0\" and a traceback cut before its last line"),
    ("b-sglang-cpu-pr36260", "SGLang's CPU backend prints \"GPU memory\" for NUMA-node RAM"),
    // The second unseen batch (measured before its rules were written; see README):
    ("f-sglang-165", "an AttributeError whose cause (an exhausted KV pool) only the thread knows"),
    ("f-ds4-78", "a one-off runtime's message: the size is not extracted"),
    ("f-mlx-3327", "a 2^64-byte request from an overflow: the text reads as an allocation failure"),
    ("f-ort-20038", "ONNX Runtime's arena message with no device named in the paste"),
    ("f-cpmpaddle-7", "a Paddle traceback cut before its error line"),
    ("f-hyperd-130", "the requested size is written in a form the figure reader does not parse"),
    ("f-llamafactory-767", "exit code -7 (SIGBUS) whose thread never settled the cause"),
    ("f-rvcwebui-94", "the size is printed in decimal GB"),
    ("f-ronin-51", "only \"file cannot be opened\"; the thread found a full disk"),
    ("f-vitsft-397", "ENOSPC on a path that does not say it is /dev/shm"),
    ("f-antmmf-26", "CUBLAS_STATUS_ALLOC_FAILED from a device-selection bug"),
    ("f-followyourcanvas-2", "a misspelled segfault line (\"Segmentation fauld\")"),
    // The third unseen batch (measured before its rules were written; see README):
    ("g-av-imgretrieval-20", "a bare 0xC0000005 exit reads as a native crash; the thread never settled it"),
    ("g-ds-4571", "DeepSpeed \"Killing subprocess\" lines with no return code"),
    ("g-dsdisk-1785", "datasets' \"Not enough disk space\" from a faulty free-space check: the text says disk"),
    ("g-dsdisk-2972", "datasets' \"Not enough disk space\" from a faulty free-space check: the text says disk"),
    ("g-ktrans-1481", "the cause is only in the user's own note beside the log"),
    ("g-ktrans-oomtable-637", "the OOM killer's process table without its header or verdict line"),
    ("g-ollama-backendbuf-5941", "\"unable to allocate backend buffer\" names no device; the thread never settled it"),
    ("g-pin-heareval-316", "\"Caught RuntimeError in pin memory thread\" without the inner error"),
    ("g-ram-distllama-59", "one application's own wording, no runtime format"),
    ("g-tf-segan-42", "a TensorFlow OOM that names no device reads as the GPU"),
    ("g-unsloth-3288", "one application's own error about saving adapters"),
    // The fourth unseen batch (measured before its rules were written; see README):
    ("h-llamacpp-vulkan-asahi-29270", "Vulkan's ErrorOutOfDeviceMemory from a driver regression the thread bisected"),
    ("h-ptxla-hbm-1735", "XLA:TPU's capacity is not printed in the paste (only usage and free chunks)"),
    ("h-ollama-llama4scout-oomkill-10739", "Ollama's memory log lines only; the kill itself is not in the paste"),
    ("h-ollama-errorfault-regression-11598", "\"llama runner process has terminated: error:fault\", a regression"),
    ("h-damoyolo-cudnn-notinit-20", "CUDNN_STATUS_NOT_INITIALIZED, which the thread fixed with a smaller batch"),
    ("h-nccl-ipchost-473", "NCCL's 'unhandled system error' that --ipc=host fixed: the paste does not say shm"),
    ("h-tgi-falcon-numheads-1354", "a sharding ValueError in TGI's model code, no runtime format"),
    // The fifth unseen batch (measured before its rules were written; see README):
    ("i-ort-bfc-16307", "ONNX Runtime's arena message with no device named in the paste (its CPU arena prints it too)"),
    // The sixth unseen batch (measured before its rules were written; see README):
    ("j-ort-9939-bfc", "ONNX Runtime's arena message with no device named in the paste (its CPU arena prints it too)"),
    ("j-triton-ortbackend-249", "ONNX Runtime's arena message with no device named in the paste (its CPU arena prints it too)"),
    ("j-mindnlp-1761-npu", "MindSpore's memory-pool limit names no device (its CPU pool prints the same line)"),
    ("j-jax-30834-tpu-mmap", "only libtpu's device-scanner warnings (\"Failed to read file\"), no error line"),
    // The seventh unseen batch (measured before its rules were written; see README):
    ("k-comfyui-7004", "IPEX's 4 GB cap on one block with 15 GiB of the device free: labelled GPU, read as a per-block limit like g-xpu-4gb-ipexcomfy-11"),
    ("k-llmpdftranslator-9", "ONNX Runtime's arena message with no device named in the paste (its CPU arena prints it too)"),
    ("k-molmoact-10", "\"an illeg al memory access\": the paste splits the decisive word"),
    ("k-a1111-11056", "pip's traceback cut at \"OSError: [Errn\", before the error"),
    ("k-sdwebuidocker-64", "Docker's \"exited with code 137\" cut at \"exite\""),
    ("k-mmagic-876", "torch.load's traceback cut before its error line"),
    // The eighth unseen batch (measured before its rules were written; see README):
    ("l-mlxswift-metal-internal-139", "Metal's bare \"Internal Error\" on a command buffer, which the reporter found was not memory"),
    ("l-pytorchtutorial-dlworker-exit-3", "a bare \"DataLoader worker exited unexpectedly\", read as a killed worker; the thread's fix was num_workers=0 on Windows"),
    ("l-deepmind-gln-cpu-xla-102", "XLA's \"on device ordinal 0\" from a CPU run: the text reads as a device"),
    // The ninth unseen batch (measured before its rules were written; see README):
    // The eleventh unseen batch (measured before its rules were written; see README):
    ("o-grabgpu-5", "one application's own wording (\"Failed to allocate 16.00 GB GPU memory\"), no runtime format"),
    ("o-onetrainer-save-579", "an application's \"Check your disk space!\" quoted in prose"),
    // The thirteenth unseen batch (measured before its rules were written; see README):
    ("q-ner-rnn-1", "TensorFlow's \"Resource exhausted: <path>\" on a file open, which it raises for ENOSPC and for EMFILE alike; the rule reads disk"),
    // The fourteenth unseen batch (measured before its rules were written; see README):
    ("r-d2-docker-2g-typed", "a hand-typed message with \"totalcapacity\" run together: the total is not read"),
    ("r-elastic-agent-sigterm", "the elastic agent's caught SIGTERM: a scheduler, a preemption or a memory eviction, which the text does not tell apart"),
    ("r-inductor-oom-compilationerror", "a Triton CompilationError whose out-of-memory cause is not in the paste"),
    ("r-keras2cpp-bad-alloc-layers", "std::bad_alloc (a host allocation failure) whose thread never settled the cause"),
    ("r-mmaction2-cudnn-notsupported-oom", "CUDNN_STATUS_NOT_SUPPORTED, which another thread fixed with another cudatoolkit"),
    ("r-nccl-systemerror-malloc", "ncclSystemError (socket or malloc) whose thread never settled the cause"),
    ("r-pdvc-cuda-unknown-1050", "\"CUDA error: unknown error\", which the thread traced to memory; the text names none"),
    ("r-video2x-cudnn-badparam", "CUDNN_STATUS_BAD_PARAM, which the maintainer only guessed was memory"),
    // The fifteenth unseen batch (measured before its rules were written; see README):
    ("s-chatglm-ft-shards-sigkill-zh", "DeepSpeed \"Killing subprocess\" lines with no return code"),
    ("s-kvcached-v1-available-lt-need", "a KV-cache plug-in's own warning before a traceback cut short"),
    ("s-sockeye-cublas-handle-failed", "MXNet's failed cuBLAS handle, which smaller models fixed; the text names no memory"),
    ("s-tony-tf231-cudnn-handle-growth", "TensorFlow's \"Could not create cudnn handle\", which the thread fixed with memory growth; the text names no memory"),
    ("s-waifu2x-vk-minus1-vram", "Vulkan's -1 is host memory by the spec; this driver returned it for video memory"),
    // The sixteenth unseen batch (measured before its rules were written; see README):
    ("t-chatglm-eff-tuning-streamwriter-write-failed", "PyTorch's stream writer \"file write failed\", a full disk where threads settle it; this one never did"),
    // The seventeenth unseen batch (measured before its rules were written; see README):
    ("u-lf-zero3-offload-bias-correction", "a KeyError traceback whose cause (an optimizer option) only the thread knows"),
    ("u-lmstudio-resources-observer-shutdown", "an application's own failure to read system resources"),
    ("u-mlflow-gunicorn-timeout-then-sigkill", "gunicorn's own kill after a worker timeout: not memory, but the timeout itself may be swapping"),
    // The eighteenth unseen batch (measured before its rules were written; see README):
    ("r-nanochat-443", "the user's own shortening of PyTorch's message (\"GPU has X GiB total, Y GiB free\"): the kind is right, the figures are not read"),
    ("r-jax-16078", "cuDNN's handle failure beside XLA's free-memory line (17% free): read as a CUDA fault, which the text does not settle"),
    ("r-colabfold-207", "cuBLAS's EXECUTION_FAILED after ColabFold's own question \"Not Enough GPU memory?\": read as a CUDA fault, which the text does not settle"),
    // The nineteenth unseen batch (measured before its rules were written; see README):
    ("s-unsloth-841", "one application's own wording (\"Quantization failed\", pointing at building llama.cpp), no runtime format"),
    // The twentieth unseen batch (measured before its rules were written; see README):
    ("t20-smtrainingtoolkit-204", "\"disck utilisation reached 100%\" in a user's words, with only a progress log"),
    ("t20-qwen-895", "\"CUDA outof memory\" as an OCR of a screenshot wrote it"),
    ("t20-wsl-8984", "a user's account of WSL2 killing the script, no message"),
    ("t20-donerf-7", "a ValueError in the pin-memory thread, which names no memory failure either way"),
    ("t20-lmstudio-1067", "a user's account of a full disk, no message"),
    ("t20-tensorrtllm-186", "a user's account of a kill they traced to OOM in dmesg, dmesg not pasted"),
    ("t20-bitnet-120", "a user's account of running through 32 GB of RAM, no message"),
    // The twenty-first unseen batch (measured before its rules were written; see README):
    ("t21-lmdeploy-1298", "\"报OOM\" in a user's question, with no message and no device named"),
    ("t21-jukebox-27", "Colab's \"crashes after using all available RAM\" retyped with a typo (\"avilable\")"),
    ("t21-chatglm-finetuning-75", "\"Killed\" inside a Chinese sentence, not as the shell prints it"),
    ("t21-comfyui-manager-2327", "a user's account of WSL quitting after a RAM spike, no message"),
    ("t21-sd-scripts-648", "PyTorch's message cut after \"GPU 0; 11.76\": the capacity's unit is missing"),
    ("t21-vllm-20743", "a user's account of XPU's missing memory query, without the error"),
    // The twenty-second unseen batch (measured before its rules were written; see README):
    ("t22-lidarbonnetal-52", "a DataLoader traceback cut before the worker's signal"),
    ("t22-tfmodels-8487", "TensorFlow's \"OOM when allocating tensor\" without its device clause: read as the GPU's, TensorFlow's usual case"),
    ("t22-gluefactory-14", "a user's account of running out of space on a disk, in words the reader does not take as a statement"),
    ("t22-deepspeed-7650", "a DeepSpeed traceback cut before its error line"),
    ("t22-pyannote-1036", "PyTorch's message with its figures replaced by placeholders and \"0 bytes free\" cut before its semicolon"),
    ("t22-sdwebuidocker-457", "\"Finally, it's killed\" in a user's words, with no memory named"),
    ("t22-genshinfish-63", "a bare CUDNN_STATUS_INTERNAL_ERROR: read as a CUDA fault, which the text does not settle"),
    ("t22-drqa-120", "a multiprocessing traceback cut before its error line"),
    // The twenty-third unseen batch (measured before its rules were written; see README):
    ("t23-axolotl-2975", "a user's account of RAM climbing to 1.3 T, in words the reader does not take as a statement"),
    ("t23-trtllm-743", "\"the program always be killed\" in a user's words, with no memory named"),
    ("t23-comfyui-8932", "\"disk quota exceeded\" after an \"if\" clause in the same sentence, read as a condition"),
    ("t23-talkinggaussian-74", "a user's account with no message"),
    ("t23-sd-dreambooth-ext-788", "a user's account with no message"),
    ("t23-codalab-4055", "a user's account of a storage limit, with no message"),
    // The twenty-fourth unseen batch (measured before its rules were written; see README):
    ("t24-infinity-517", "an OOM and the GPU named in two different sentences of a user's account"),
    ("t24-invertiblecd-2", "\"RAM Crashed ... OOM memorry\" as a title, not a statement"),
    ("t24-4dgs-16", "PyTorch's message cut inside \"already allocate\": the allocated figure is not read"),
    ("t24-ragatouille-239", "a bare AssertionError with a shape tuple, which names no failure"),
    // The twenty-fifth unseen batch (measured before its rules were written; see README):
    ("t25-mlagents-1456", "a KeyError, which names no failure of memory or anything else decisive"),
    ("t25-cdtnet-6", "a bare CUDNN_STATUS_INTERNAL_ERROR: read as a CUDA fault, which the text does not settle"),
    ("t25-matconvnet-1210", "a bare CUDNN_STATUS_INTERNAL_ERROR: read as a CUDA fault, which the text does not settle"),
    // The twenty-sixth unseen batch (measured before its rules were written; see README):
    ("t26-seq2seq_chatbot_new-19", "TensorFlow's \"OOM when allocating tensor\" without its device clause: read as the GPU's, TensorFlow's usual case"),
    ("t26-colabtools-816", "TensorFlow's \"OOM when allocating tensor\" without its device clause: read as the GPU's, TensorFlow's usual case"),
    // The twenty-seventh unseen batch (measured before its rules were written; see README):
    ("t27-chatscene-54", "a script's own memory printout (RAM 98.7% used, swap nearly full) with no error line: no runtime's format to read"),
    // The twenty-eighth unseen batch (measured before its rules were written; see README):
    ("t28-ysbecca-github-io-programming-2018-01-30", "TensorFlow's \"OOM when allocating tensor\" without its device clause: read as the GPU's, TensorFlow's usual case"),
    ("t28-tensorflow-576", "TensorFlow's \"OOM when allocating tensor\" without its device clause: read as the GPU's, TensorFlow's usual case"),
    // The thirtieth unseen batch (measured before its rules were written; see README):
    ("t30-coral_usb_ros-31", "a maintainer's guess in Japanese (\"おそらく…GPUメモリが足りず\") beside an nvidia-smi table, no error message"),
    ("t30-nomeroff-net-42", "a Russian account whose error is on a screenshot; only \"Resource exhausted\" and the card are named"),
    ("t30-naver-ai-rush-30", "exit code 137 that the platform annotates as OOM beside \"OOMKilled False\": the signals disagree"),
    ("t30-pixel_link-14", "a question (RAM rising, VRAM flat), which the statement reader does not take as a statement"),
];

#[test]
fn every_corpus_case_is_classified_and_its_figures_extracted() {
    let text = std::fs::read_to_string("tests/data/error-corpus.jsonl").unwrap();
    let mut failures = Vec::new();
    let mut known = 0;
    let mut missed_ids = Vec::new();
    let mut total = 0;
    let mut held_out = (0, 0);
    let mut look_alikes_called_memory = 0;
    let mut kinds = std::collections::BTreeMap::<String, usize>::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let case: Value = serde_json::from_str(line).unwrap();
        total += 1;
        let id = case["id"].as_str().unwrap();
        let want = case["kind"].as_str().unwrap();
        *kinds.entry(want.to_string()).or_default() += 1;
        assert!(
            case["source"].as_str().unwrap().starts_with("https://"),
            "{id}: cite a source"
        );
        let d = diagnose(case["text"].as_str().unwrap(), None);
        let is_held_out = case["held_out"].as_bool().unwrap_or(false);
        held_out.1 += usize::from(is_held_out);
        if kind_id(d.kind) != want {
            // A look-alike (labelled not memory) that the doctor calls GPU or host memory.
            look_alikes_called_memory +=
                usize::from(want == "not-memory" && matches!(d.kind, Kind::Gpu | Kind::Host));
            if KNOWN_MISSES.iter().any(|(k, _)| *k == id) {
                known += 1;
                missed_ids.push(id.to_string());
            } else {
                failures.push(format!("{id}: got {:?}, labelled {want}", d.kind));
            }
            continue;
        }
        held_out.0 += usize::from(is_held_out);
        let got = serde_json::to_value(d.numbers).unwrap();
        let known_miss = KNOWN_MISSES.iter().any(|(k, _)| *k == id);
        let mut figure_missed = false;
        for (field, expected) in case["numbers"].as_object().unwrap() {
            let e = expected.as_f64().unwrap();
            match got[field].as_f64() {
                Some(g) if (g - e).abs() <= 0.01 + 1e-3 * e.abs() => {}
                _ if known_miss => figure_missed = true,
                other => failures.push(format!("{id}: {field} = {other:?}, labelled {e}")),
            }
        }
        // A known miss whose kind is right still counts as a miss when a figure is wrong.
        known += usize::from(figure_missed);
        if figure_missed {
            missed_ids.push(id.to_string());
        }
    }
    println!(
        "doctor corpus: {} of {total} correct, {known} known misses, {look_alikes_called_memory} look-alikes called memory; held-out part {} of {} ({kinds:?})",
        total - failures.len() - known,
        held_out.0,
        held_out.1
    );
    assert!(total >= 680, "the corpus should cover every kind");
    // Every listed miss is still a miss: one the doctor now gets right leaves the list.
    let now_right: Vec<_> = KNOWN_MISSES
        .iter()
        .filter(|(k, _)| !missed_ids.iter().any(|m| m == k))
        .map(|(k, _)| *k)
        .collect();
    assert!(
        now_right.is_empty(),
        "now right, drop from KNOWN_MISSES: {now_right:?}"
    );
    for k in ["gpu", "host", "disk", "not-memory", "unrecognised"] {
        assert!(kinds.contains_key(k), "no {k} case");
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn look_alikes_are_not_memory_problems() {
    for text in [
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        "RuntimeError: CUDA error: device-side assert triggered",
        "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1333, unhandled cuda error",
        // CUDA runtime faults that mention memory or addresses but not its size.
        "RuntimeError: CUDA error: misaligned address",
        "RuntimeError: CUDA error: invalid argument",
        "RuntimeError: cuda runtime error (35) : CUDA driver version is insufficient for CUDA runtime version",
        "RuntimeError: The NVIDIA driver on your system is too old (found version 11000).",
        "x.cu:1: indexSelectLargeIndex: block: [0,0,0], thread: [0,0,0] Assertion `srcIndex < srcSelectDimSize` failed.",
        // cuBLAS / cuDNN status codes other than ALLOC_FAILED.
        "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm(handle)`",
        "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`",
        "RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR",
        // A workspace cap, not a full device.
        "Check failed: (param_.workspace) >= (required_size) Minimum workspace size: 666989568 Bytes Given: 536870912 Bytes",
        // NCCL timeouts and a CUDA failure next to "shared memory segment".
        "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE) ran for 600000 milliseconds before timing out.",
        "NCCL WARN Cuda failure 'invalid argument'\nNCCL WARN Error while creating shared memory segment /dev/shm/nccl-x (size 9637888)",
        // Corrupt or truncated checkpoints ("ran out of input" is not memory).
        "safetensors_rust.SafetensorError: Error while deserializing header: MetadataIncompleteBuffer",
        "safetensors_rust.SafetensorError: Error while deserializing header: HeaderTooLarge",
        "RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central directory",
        "EOFError: Ran out of input",
        // XLA "out of memory" for a few bytes: a broken build.
        "RuntimeError: Resource exhausted: Out of memory while trying to allocate 24 bytes.",
        // A tokenizer warning.
        "Token indices sequence length is longer than the specified maximum sequence length for this model (2409 > 2048). Running this sequence through the model will result in indexing errors",
    ] {
        assert_eq!(diagnose(text, None).kind, Kind::NotMemory, "{text}");
    }
    // Texts that mention memory without an error in them.
    for text in [
        "hello world, my model is slow",
        "If you encounter CUDA out of memory, try to set --tile with a smaller number.",
        "INFO model_runner.py:1] Capturing cudagraphs for decoding. If out-of-memory error occurs during cudagraph capture, consider decreasing `gpu_memory_utilization`.",
        "INFO worker.py:1] the current vLLM instance can use total_gpu_memory (15.77GiB) x gpu_memory_utilization (0.90) = 14.20GiB",
        "google.api_core.exceptions.ResourceExhausted: 429 RESOURCE_EXHAUSTED: Quota exceeded for requests per minute",
        "Sending process 42 closing signal SIGTERM",
    ] {
        assert_eq!(diagnose(text, None).kind, Kind::Unrecognised, "{text}");
    }
}

#[test]
fn a_capacity_that_differs_from_the_chosen_gpu_is_flagged() {
    let text = "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 22.00 MiB. GPU 0 has a total capacity of 23.65 GiB of which 11.06 MiB is free.";
    let d = diagnose(text, Some(78.4));
    assert!(
        d.hints.contains(&vramfit::doctor::Hint::CapacityMismatch),
        "{d:?}"
    );
    assert!(!diagnose(text, Some(23.5))
        .hints
        .contains(&vramfit::doctor::Hint::CapacityMismatch));
}

proptest::proptest! {
    #[test]
    fn never_panics_on_any_text(s in "\\PC{0,2000}") {
        let _ = diagnose(&s, Some(24.0));
    }

    #[test]
    fn never_panics_on_mangled_oom_messages(a in "[0-9., ]{0,12}", b in "[A-Za-z]{0,4}", cut in 0usize..200) {
        let base = format!("CUDA out of memory. Tried to allocate {a}{b} (GPU 0; {a} GiB total capacity; {a} already allocated; {b} free; {a}{b} reserved in total by PyTorch)");
        let cut = cut.min(base.len());
        let mut end = cut;
        while !base.is_char_boundary(end) { end -= 1; }
        let _ = diagnose(&base[..end], None);
    }
}

#[test]
fn a_ten_megabyte_paste_is_handled() {
    let mut big = "x".repeat(10 << 20);
    big.push_str("\nRuntimeError: CUDA out of memory. Tried to allocate 1.00 GiB");
    let d = diagnose(&big, None);
    assert_eq!(d.kind, Kind::Gpu);
    assert!((d.numbers.tried_gib.unwrap() - 1.0).abs() < 1e-9);
}
