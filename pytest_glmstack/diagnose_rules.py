"""What diagnose weighs: the evidence of health and failure, the rules and word families that
name a category, and the one-line summaries. Pure text; used by :mod:`pytest_glmstack.diagnose`."""

from __future__ import annotations

import re

from .diagnose_log import _COMPILER_KILLED, _COMPILER_MISSING, _MEMORY_KILL, _NCCL_NET_ERROR, _NIXL_REGISTRATION, _WRONG_DATA, _FALLBACK, _FRAME_RE, _TB_START, Frame, _Exc, _Line, _origin, short_path


# --- evidence ---------------------------------------------------------------------------------


def _recovered(lines, k) -> bool:
    nxt = [ln.body for ln in lines[k: k + 4] if ln.body.strip()][:3]
    return any(_FALLBACK.search(b) for b in nxt)


# Evidence of a hang that only counts when the log makes no progress after it.
_HANG_NOTE = re.compile(r"No available shared memory broadcast block found in \d+ seconds")
# --- categories -------------------------------------------------------------------------------

# A line that is no diagnostic of a package's own source build (its sources sit under csrc/;
# FlashInfer's JIT sources and a JIT loader's, sglang/kernels/jit/csrc/..., do too, and stay JIT)
_NOT_SOURCE_BUILD = r"^(?=.*flashinfer|.*/jit/|(?!.*/csrc/))"

# Ordered: the first rule whose pattern is found wins. A category may have several rules.
_RULE_SRC = (
    # a request or a setting longer than the lengths the server was started with: no memory failure
    ("other", r"(?:input|prompt|sequence|request)s?\b[^\n]{0,60}(?:exceeds|is longer than) the [\w' ]{0,40}maximum "
              r"(?:supported |allowed |model |context )?length \(\d+"),
    # FlashInfer's fixed-size workspace buffer too small for the batch it planned ("Out of workspace
    # memory in AlignedAllocator", "Buffer overflow when allocating memory for batch_prefill_tmp_v ...
    # Increase the workspace buffer size"): a size the engine set, not the GPU out of memory
    ("other", r"\bOut of workspace memory\b|\bIncrease the workspace buffer size\b|\bBuffer overflow when allocating memory for \w"),
    # the disk (a cache, a home directory with a quota) is full: the machine, whoever reports it
    # (not NCCL's shared-memory segments: a container's /dev/shm too small is NCCL's setup)
    ("other", r"^(?!.*NCCL).*(?:\[Errno (?:28|122)\]|No space left on device|Disk quota exceeded)"),
    # the GPU is taken (exclusive compute mode, another process) or absent: the machine ("invalid
    # device ordinal": a GPU index this machine, or its CUDA_VISIBLE_DEVICES, does not have)
    ("other", r"CUDA-capable device\(s\) is/are busy or unavailable|cudaErrorDevicesUnavailable|"
              r"\binvalid device ordinal\b|\bcudaErrorInvalidDevice\b"),
    # the driver is older than the CUDA runtime the program ships: the machine, not the program
    ("other", r"CUDA driver version is insufficient for CUDA runtime version|cudaErrorInsufficientDriver|"
              r"CUDA_ERROR_SYSTEM_DRIVER_MISMATCH|NVIDIA driver on your system is too old|"
              # PTX newer than the driver's JIT can read: the driver is older than the toolkit that built it
              r"provided PTX was compiled with an unsupported toolchain|cudaErrorUnsupportedPtxVersion"),
    # a model whose architecture the engine has no implementation of: the model, not the GPU's architecture
    ("other", r"architectures?:? \[[^\]\n]*For[A-Z]\w*[^\]\n]*\] (?:are|is) not supported|"
              r"[Cc]an ?not (?:find|found) [\w ]{0,30}for (?:model )?architectures?\b|\bUnsupported model architecture\b|"
              # SGLang's Transformers fallback finding no class for the model either
              r"\bis not a registered model in the Transformers library\b|"
              # Transformers too old for the checkpoint's model type (also inside vLLM's config validation)
              r"\bhas model type `[\w.-]+` but Transformers does not recognize this architecture\b|"
              # vLLM could not load the model's class to inspect it (its config's validation reports it)
              r"\bModel architectures \[[^\]\n]*\] failed to be inspected\b"),
    # vLLM's profiling check that free memory did not grow while it measured (another process
    # on the GPU freeing memory): no shortage of memory
    ("other", r"Error in memory profiling\. Initial free memory [\d.]+ ?GiB, current free memory"),
    # NCCL's watchdog reporting a kernel's fault (the CUDA error is sticky: the collective only met it)
    # (not "unspecified launch failure": NCCL's own kernels, a link that failed, end that way too)
    ("other", r"watchdog thread terminated with exception: CUDA error: (?:an illegal memory access|misaligned address|"
              r"an illegal instruction)|^an illegal memory access was encountered$|"
              # a kernel's own assertion (an index out of bounds): the code or the model, whoever reports
              # it (not a communication library's device code: MSCCL++'s FIFO asserting is its failure)
              r"^(?!.*(?:mscclpp|nccl|nvshmem|deep_?ep)).*(?:\bdevice-side assert(?:ion)? triggered\b|\bcudaErrorAssert\b)"),
    # the GPU's memory failed (an uncorrectable ECC error): the hardware, whichever library met it first
    # (NCCL's watchdog, custom all-reduce)
    ("other", r"\buncorrectable ECC error\b|\bcudaErrorECCUncorrectable\b|\bCUDA_ERROR_ECC_UNCORRECTABLE\b"),
    # a driver-API call's CUresult printed by a C++ extension (torch_memory_saver): 2 is
    # CUDA_ERROR_OUT_OF_MEMORY, any other code (1, an invalid value) the code's own fault
    ("oom", r"\bCUresult error\s+result=2\b"),
    ("other", r"\bCUresult error\s+result=(?!2\b)\d+"),
    # a package missing or not matching its dependents (an install), whatever its name says;
    # not a module a JIT build should have produced (Triton's cuda_utils, a torch extension)
    ("other", r"(?:ModuleNotFoundError|ImportError): No module named '?(?![\w.]*(?:cuda_utils|__triton_launcher|_jit_|torch_extensions))|"
              r"\bis not available or outdated\b|\bPlease install or update (?:the )?\S+|"
              # the dynamic loader out of static TLS for a library loaded late (libgomp under torch_npu):
              # how the libraries load, no memory that ran out
              r"\bcannot allocate memory in static TLS block\b"),
    # two tensors whose shapes do not fit (a draft model's against the target's): the model's or the
    # code's sizes, also when a capture wrapper quotes it
    ("other", r"\bmat1 and mat2 shapes cannot be multiplied\b|\bThe size of tensor a \(\d+\) must match the size of tensor b \(\d+\)|"
              # a view or reshape the tensor's layout cannot give
              r"\bview size is not compatible with input tensor's size and stride\b|\bshape '\[[\d, -]*\]' is invalid for input of size \d+"),
    # FlashInfer's kernel dispatcher finding no tile configuration for the shapes it was given
    # ("Unsupported max_mma_kv: 0", "FlashInfer Internal Error: Invalid configuration : NUM_MMA_Q=1
    # ..."): its own selection code, printed from a header it runs, no JIT build and no named arch
    ("other", r"\bUnsupported max_mma_kv: \d+|\bFlashInfer Internal Error: Invalid configuration\b"),
    # a checkpoint file that does not parse: the model's files
    ("other", r"\bSafetensorError\b|\bError while deserializing header\b"),
    # a kernel that refuses the device it runs on, whatever refusal carries it ("NvFp4 MoE backend
    # 'FLASHINFER_CUTLASS' does not support the deployment configuration since kernel does not
    # support current device"): the architecture, not the flags
    ("arch_unsupported", r"\bkernel does not support (?:the )?current (?:device|GPU)\b"),
    # CUTLASS's Python DSL (CuTe DSL) compiles its kernels at run time through MLIR: an error of its
    # MLIR bindings is a JIT compile's
    ("flashinfer_jit", r"\bcutlass\._mlir\b"),
    # TensorRT-LLM compiles its XQA attention kernels at run time with NVRTC: a JIT build
    ("flashinfer_jit", r"\bTllmXqaJit runtime error\b|\btllmXqaJitCreateAndCompileProgram\b"),
    ("bad_flag", r"^error: invalid argument: \S|"
                 # vLLM's attention-backend selector refusing the backend asked for, and a parallelism
                 # the model's architecture does not support
                 r"\bSelected backend \S+ is not valid for this configuration\b|"
                 r"\b(?:Pipeline|Tensor|Data|Expert|Context) parallelism is only supported for the following\s+architectures\b|"
                 # two options refused together, whatever exception carries it: "--enable-auto-tool-choice
                 # and --enable-reasoning cannot be enabled at the same time"
                 r"--[\w-]+ (?:and|with) --[\w-]+ (?:cannot|can't|can not|must not) be (?:enabled|used|set|specified|combined)\b|"
                 # ... or as the config's keys: "num_speculative_tokens_per_batch_size and
                 # adaptive_speculative_tokens_window are not supported"
                 r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+){2,} (?:and|with) [a-z][a-z0-9]*(?:_[a-z0-9]+){2,} (?:are|is) not supported\b|"
                 # "Model InternVLChatModel does not support LoRA, but LoRA is enabled"
                 r"\bdoes not support [\w -]{1,40}, but [\w -]{1,40} (?:is|are) enabled\b|"
                 # a backend refusing the full CUDA graph the config asked for ("AoT scheduling is
                 # required for full cuda graph": FlashAttention 2 on a pre-Hopper GPU): the setting
                 r"\bis required for full[ _]cuda[ _]graphs?\b|(?:error: )?unrecognized arguments: -|error: unrecognized arguments|error while handling argument\b|\berror: unknown value for --|"
                 # more GPUs asked for (--tp, --world-size) than the machine has
                 r"\b\d+ GPUs? (?:are |is )?available,? but \d+ (?:are |is )?(?:required|requested|needed)\b|"
                 r"number of required GPUs exceeds the (?:total )?number of available GPUs|"
                 # ranks launched (MPI's, torch's world) that do not match the parallel sizes asked for
                 # (TensorRT-LLM: "Assertion failed: mpiSize == tp * pp")
                 r"\b(?:mpi|world)_?size\s*(?:==|!=)\s*\(?\w*tp\w*\s*\*\s*\w*pp\b|\S+: (?:unrecognized option '-|invalid option -- '|option '-[^']*' requires an argument)|error: argument -{1,2}[\w-]+|error: the following arguments are required|"
                 r"^error: (?:invalid value '[^']*' for '-|unexpected argument '-|Found argument '-)|"
                 # click's command-line errors (trtllm-serve, trtllm-bench and other click CLIs)
                 r"^Error: (?:No such option|Invalid value for '-|Missing option '-|Got unexpected extra arguments?|Option '-[^']*' requires)|"
                 r"^flag provided but not defined: -|"  # Go's flag package (ollama's runner)
                 # TensorRT-LLM's engine built for another number of ranks than the job runs
                 r"\bEngine world size \([^)]*\) != Runtime world size\b|"
                 # (argparse's usage, also wrapped to one option a line: "usage: server.py" then "       [-h]")
                 r"invalid choice: |^usage: \S+(?: [a-z][\w-]*){0,3} \[-h\]|^\s{4,}\[-h\]\s*$|validation errors? for (?:\w*Config|\w*Args)\b|"
                 r"(?:EngineArgs|ServerArgs|AsyncEngineArgs)\.__init__\(\) got an unexpected keyword argument"),
    # (not a Unix-domain socket's file: NCCL's "UDS: Binding to socket /tmp/nccl-socket-... failed")
    ("port_in_use", r"^(?!.*(?:\bUDS\b|[Bb]inding to socket /|\.sock\b)).*?(?:address already in use|couldn't bind (?:HTTP server )?socket|\[Errno 98\]|\[Errno (?:13|10048|10013)\] error while attempting to bind|errno: 98\b|port \d+ is (?:already )?in use|port is not available|"
                    r"\bEADDRINUSE\b|server socket has failed to (?:listen|bind)|"
                    # a Go server's listener (LocalAI, ollama): "failed to listen: listen tcp4 0.0.0.0:8080: bind: ..."
                    r"\bfailed to listen: listen tcp[46]? |"
                    # HCCL (Ascend): "The IP address and port have been bound already", "... port[16666] fail. Please
                    # check the port status and whether the port is being used by other process"
                    r"\bport (?:has|have) been bound already|\bport\b[^\n]{0,60}\bis being used by (?:an)?other process|"
                    # Gradio finding every port of its range taken
                    r"\bCannot find empty port in range\b|"
                    # a Rust server's listener (Dynamo's frontend, TGI's router): "could not bind to address: 0.0.0.0:8000"
                    r"\bcould not bind to address\b)"),
    # binding an address that is not this machine's (a wrong host or IP): the configuration, no port
    # taken (after port_in_use: a log with both has a port taken)
    ("other", r"\bCannot assign requested address\b|\bEADDRNOTAVAIL\b"),
    # Dynamo giving up on a function that recompiled too often (raised as Unsupported since torch 2.7)
    ("dynamo_other", r"\bDynamo recompile limit exceeded\b|\brecompile_limit\b|\bcache_size_limit\b"),
    ("dynamo_unsupported", r"torch\._dynamo\.exc\.(?:Unsupported|UserError)\b|^\s*Unsupported: \S|Attempted to call function marked as skipped|"
                           r"Graph break due to|graph break|^\s*(?:raise )?unimplemented(?:_v2)?\("),
    # SGLang's piecewise graph meeting a Dynamo recompilation at run time (its capture stream is
    # gone): the compile, not the capture
    ("dynamo_other", r"please check if runtime recompilation happened"),
    # errors that only happen while a CUDA graph is being captured
    ("cuda_graph_capture", r"cudaErrorStreamCapture\w*|disable cuda graph by --disable-cuda-graph|operation not permitted when stream is capturing|stream is capturing|"
                           r"current capture mode does not support|"
                           r"depend on a capturing (?:blocking )?stream|"
                           r"uncaptured work|during (?:CUDA )?graph capture|during capture|capture stream|"
                           r"Offset increment outside graph capture|cudaErrorGraphExecUpdateFailure|"
                           r"accessing tensor output of CUDAGraphs|CUDAGraphs? .*overwritten|"
                           # a graph's capture_begin refused (torch_npu names its NPUGraph.cpp)
                           r"\bcapture_begin\b[^\n]{0,80}(?:error|fail)|(?:CUDA|NPU)Graph\.cpp:\d+|"
                           # a captured graph's update refused (ggml: cudaGraphKernelNodeSetParams, cudaGraphExecUpdate)
                           r"^\s*cudaGraph(?:KernelNodeSetParams|ExecUpdate|ExecKernelNodeSetParams|Instantiate)\w*\(|"
                           # torch_npu's assert on the ACL graph's capture status
                           r"\baclmdlRICapture\w*|_CAPTURE_STATUS_\w+"),
    ("dynamo_other", r"torch\._(?:dynamo|inductor)\.exc\.\w+|BackendCompilerFailed|InductorError|LoweringException|"
                     # Inductor's compile workers (torch/_inductor/compile_worker) and Dynamo's own errors
                     r"\bSubprocException\b|\bInternalTorchDynamoError\b|"
                     # Inductor's autotuning of its generated kernels (what its launch raised, save memory)
                     r"\bFailed to run autotuning code block\b(?![^\n]*\b(?:out of memory|OutOfMemory))|"
                     r"torch\._dynamo hit config|TorchRuntimeError|RecompileError|InvalidCxxCompiler|"
                     # symbolic shapes asked to guard on a value only known at run time (Inductor's
                     # lowering, or Dynamo's tracing with dynamic shapes): the compile's own limits
                     r"\bGuardOnDataDependentSymNode\b|Could not guard on data-dependent expression"),
    # NCCL's own report that an allocation failed: memory, not the network (the peers' "connection
    # closed by remote peer" that follows is the consequence)
    ("oom", r"NCCL WARN (?:Cuda failure '?out of memory|Failed to CUDA (?:c|m|host )?alloc|.*\bout of memory\b)|^\s*Cuda failure 'out of memory'|"
            # NVSHMEM prints the CUDA driver's status: 2 is CUDA_ERROR_OUT_OF_MEMORY
            r"non-zero status: 2 cuMem(?:Create|Alloc\w*|Map)\b"),
    # a build whose compiler the kernel killed (its OOM killer): memory, not the code being built
    ("oom", _COMPILER_KILLED + r"|^\s+Killed\s*$"),  # (also the shell's "Killed" under a build step, indented by pip)
    # a compiler's own diagnostic in a kernel source is a build failure, whatever the source is
    # for (flashinfer/comm/vllm_custom_all_reduce.cuh); not an arch check's "#error ... sm_90"
    ("flashinfer_jit", r"^(?!.*(?:\bsm_?\d|\barch|capabilit))" + _NOT_SOURCE_BUILD +
                       r"[\w./-]+\.(?:h|hh|hpp|cuh|cu|cpp|cc)(?::\d+(?::\d+)?: (?:fatal )?error: |\(\d+\): error\b)"),  # (gcc's, nvcc's forms)
    # a build that cannot run its compiler, or find an installation it compiles against ("Could not
    # find NVSHMEM installation" from TVM's nvcc wrapper): the build, whatever the library's name
    ("flashinfer_jit", _COMPILER_MISSING + "|" r"No such file or directory: '(?:nvcc|ninja|gcc|g\+\+|cc|c\+\+|clang(?:\+\+)?|hipcc)'|"
                       r"\bCould not find (?:the )?[\w-]+ installation\b"),
    ("nccl_comm", r"\bNCCL error\b|DistBackendError|nccl\w*Error|ncclUnhandledCudaError|ncclSystemError|ncclInternalError|NCCL WARN|"
                  + _NCCL_NET_ERROR),
    ("oom", r"OutOfMemoryError|CUDA out of memory|CUDA error: out of memory|\bout of memory\b|Not enought? memory|cudaErrorMemoryAllocation|"
            r"CUDA_ERROR_OUT_OF_MEMORY|No available memory for the cache blocks|"
            # Vulkan's and Metal's words (ggml)
            r"\bErrorOutOf(?:Device|Host|Pool)Memory\b|\b(?:PI|UR_RESULT)_ERROR_OUT_OF_(?:HOST|DEVICE)_MEMORY\b|\bDevice memory allocation of size \d+ failed\b|\bkIOGPUCommandBufferCallbackErrorOutOfMemory\b|\bInsufficient Memory\b|KV cache (?:is )?too small|"
            r"max_total_num_tokens.*(?:too small|<=? ?0)|Available KV cache memory: -\d|\bOutOfMemory\b|lack of (?:CPU )?swap space|larger than the maximum number of tokens that can be stored in KV cache|"
            r"KV cache is needed, which is larger than the available\s+KV cache memory|# GPU blocks: 0\b|To serve at least one request with the model's max seq len|"
            r"Cannot allocate memory|can't allocate memory|insufficient (?:GPU |device |host |CUDA )?memory|exceeds the maximum allowed length \(-\d+ tokens\)|profiled value -\d|"
            r"CUDACachingAllocator|exit (?:code|status):? 137\b|"
            # a planner's own audit of the GPU's free memory ("free HBM is below the runtime reserve")
            r"\bfree (?:HBM|GPU memory|device memory) is below\b|"
            r"\bmemory allocation failed with OOM on device\b|"
            # vLLM's block manager with no KV-cache block left; ggml's buffer whose allocation returned NULL
            r"\bNoFreeBlocksError\b|backend buffer base cannot be NULL|"
            # vLLM's checks that the KV cache holds one request (a traceback cut off at the call names them)
            r"\braise_if_cache_size_invalid\(|\b_?check_enough_kv_cache_memory\(|"
            # TensorRT-LLM's paged KV cache too small for one sequence
            r"\bmaxTokensInPagedKvCache must be large enough\b|"
            # llama.cpp's KV cache with fewer cells than one batch holds tokens
            r"\bfind_slot: n_tokens = \d+ > size = \d+|"
            # vLLM: less free memory at start-up than gpu_memory_utilization asks for
            r"Free memory on device\b[^\n]{0,60}\bon startup is less than desired GPU memory utilization|"
            # ggml (llama.cpp, ollama): "failed to allocate CUDA0 buffer of size ...", "unable to allocate CPU buffer"
            r"\b(?:failed|unable) to allocate (?:\w+ )?buffer\b|"
            # Ray's memory monitor killing tasks for want of host memory
            r"\bray-oom-prevention\b|\bnode running low on memory\b|Killed signal terminated program|(?<!a common cause is the OS )oom[-_ ]?kill|^Killed\s*$|"
            + _MEMORY_KILL),
    # the dynamic loader finding no symbol a binary needs in the library it loaded (a build against
    # another version of NCCL, torch, CUDA): the installation, not the library's work; not a JIT
    # cache's module that does not load (the build's, below)
    ("other", r"^(?!.*(?:flashinfer|/jit/|torch_extensions|cached_ops|\.triton/)).*(?:\bsymbol lookup error\b|\bundefined symbol: \w)"),
    ("nccl_comm", r"\bNCCL\b.*(?:error|Error|failure|timeout|WARN)|ProcessGroupNCCL|custom[ _]all[ _]?reduce|mscclpp|MSCCL|"
                  r"peer (?:access|mapping)|cudaErrorPeerAccess\w*|P2P (?:is )?not supported|Watchdog caught collective operation timeout|"
                  r"NVSHMEM|nvshmem|\bibrc\b|\bibv_\w+|IbError|qp creation failed|DeepEP error|NVLS|NVLink SHARP|pynccl|"
                  r"DeepEP (?:\w+ ){0,2}timeout|uncorrectable NVLink|NVLink error|peer GPU memory over nvlink|"
                  # nccl-tests' data check: a collective returned wrong results
                  + _WRONG_DATA + r"|"
                  # NVSHMEM's own error print: '<src>/host/mem/mem_heap.cpp:1519: non-zero status: 1 cuMemMap failed'
                  r"/src/(?:host|modules|device)/\w+/[\w/]*\.(?:cpp|cu):\d+: (?:non-zero status|NULL value)|"
                  r"DistNetworkError|\bgloo\b|Detected mismatch between collectives|\bmonitoredBarrier\b|"
                  # KV-cache transfer engines between instances (disaggregated prefill/decode)
                  r"\bnixl\w*Error\b|\bNIXL_ERR_\w+|\bKVTransferError\b|\bUCX\s+ERROR\b|\bMooncake\b|\btransfer_engine\b|"
                  + _NIXL_REGISTRATION + r"|"
                  r"\bNIXL (?:transfer|handshake)\w* (?:failure|failed|error)\b|\bhandshake_setup_failed\b|"
                  # HCCL, Ascend's collective library: its transport between ranks could not be set up
                  # (not "HCCL function error" alone: it also wraps a port already bound)
                  r"\bTransport init error\b|"
                  # HCCL's own error records: links between ranks not established, its return codes
                  r"\bHCCL\(\d+[^)]*\)[^\n]*\b(?:[Tt]ime ?out|[Ff]ailed|fail)\b|\bhcclRet\b"),
    ("arch_unsupported", r"no kernel image is available|CUDA_ERROR_NO_BINARY_FOR_GPU|cudaErrorNoKernelImageForDevice|"
                         r"not supported (?:on|in|by|for) (?:this|the current|your) (?:GPU|device|architecture|arch)|"
                         # LLVM (Triton's, Inductor's backend) does not know the GPU as a target
                         r"is not a recognized processor for this target|unsupported (?:GPU |CUDA )?arch|"
                         # LLVM cannot emit an instruction of the target (tcgen05, wgmma: an arch's own ISA)
                         r"LLVM ERROR: Cannot select: intrinsic %llvm\.nvvm\.|"
                         r"\bonly supports? (?:Ampere|Hopper|Ada|Turing|Volta|Blackwell|sm_?\d+)\w* GPUs? or newer|"
                         r"Unsupported architecture|architecture (?:is )?not supported|\bUnsupported SM version|\bArch unsupported for\b|"
                         r"\bdoes not support\b[^\n]{0,80}\b(?:with|on) (?:compute )?capability \d+|"
                         r"\bexcept on\b[^\n]{0,60}\b(?:Arch|architectures?|GPUs?)\b|"
                         r"(?:requires|only supported on|only support) (?:SM|sm_?|compute capability )\s?(?:[<>=]=?\s?)?\d+|sm_?\d+a? is not supported|"
                         # a CHECK on the arch: "This kernel requires 10.x architecture. Current device has SM 120"
                         r"requires (?:SM ?)?\d+(?:\.x)? architecture|Current device has SM ?\d+|"
                         r"not (?:yet )?supported on \d+\.\d+\+? architectures?|"
                         # vLLM's attention selector: no backend for this model on this GPU
                         r"No valid attention backend found for cuda\b|"
                         # ... and its linear-kernel selector; CUTLASS's kErrorInternal from a GEMM the
                         # GPU cannot run; PTX left to be JIT-compiled for a GPU the binary has no code for
                         r"Failed to find a kernel that can implement the \w+ linear layer|"
                         r"cutlass\w*[^\n]*\bError Internal\b|"
                         r"is only supported (?:for|on) (?:Hopper|Blackwell|SM)|Unsupported (?:SM|compute capability)|"
                         r"requires that CPU has AMX support|requires? (?:Intel )?(?:AMX|AVX-?512)|"
                         r"is not compatible with the current PyTorch installation|CUBLAS_STATUS_NOT_SUPPORTED|\bRuntime compute cap \d+ is not compatible with compile time compute cap\b|CUBLAS_STATUS_ARCH_MISMATCH|"
                         r"does not support \.target|Feature '[^']*' (?:is )?not supported|"
                         # ptxas refusing the target (not its other errors: a malformed PTX is a failed build)
                         r"ptxas\b.*(?:not supported|\bsm_?\d|\.target\b|gpu-name|\barchitecture)|"
                         r"PTXASError|--gpu-name=sm_\w+.*non-zero exit status|"
                         r"not (?:implemented|supported) for (?:Blackwell|Hopper|Ampere|Ada|Turing|Volta|sm_?\d+)|"
                         r"expects arch|but got Arch\.sm|kernels? (?:is |are )?not (?:found|available) for (?:this|the current) (?:GPU|device|arch)|"
                         r"(?:supported|requires?|needs?)\b[^.\n]{0,40}\bcompute capability|(?:GPU|device) does not support|"
                         r"compute capabilit(?:y|ies) (?:below|less than|lower than|under|older than|<)|"
                         # a feature refused by GPU generation: "... is not supported on Blackwell GPUs"
                         r"(?:is |are )?not (?:yet )?supported on (?:\w+ )?(?:Blackwell|Hopper|Ampere|Ada|Turing|Volta|Pascal|"
                         r"SM ?\d{2,3}|sm_?\d{2,3}|[BHAVT]\d{2,3}|GB\d{3}|RTX \w+)\b|"
                         r"only supports? (?:\w+ )?(?:GPUs?|Ampere|Hopper|Blackwell|Ada|Turing|sm_?\d+)|"
                         r"out of resource: shared memory|Hardware limit: \d+|invalid device function|hipErrorNoBinaryForGpu|"
                         # Metal's compiler: a kernel that needs more registers than this Apple GPU has
                         r"\bCompute function exceeds available (?:temporary registers|threadgroup memory)\b|"
                         # "Found Tesla P40 which is too old to be supported by the triton GPU compiler"
                         r"\b(?:GPU|device|card|Tesla|which)\b[^\n]{0,40}\bis too old to be supported\b|"
                         # NVIDIA's containers refusing a GPU older than their CUDA supports
                         r"\bGPU, which is not supported by this container\b|"
                         # TensorRT's runtime: an engine built for another GPU ("The engine plan file is
                         # generated on an incompatible device, expecting compute 8.0 got compute 8.9")
                         r"\bplan file is generated on an incompatible device\b|\bexpecting compute \d+\.\d+ got compute \d+\.\d+|"
                         # TensorRT's builder: "Target GPU SM 70 is not supported by this TensorRT release"
                         r"\bGPU SM ?\d+ is not supported\b|"
                         # a data type the device's operators lack (Ascend 910A: "bfloat16 of tbe.dsl.transdata is not supported";
                         # not "bfloat16 is not supported for quantization method awq", a refused setting)
                         r"\b(?:bfloat16|bf16) of [\w.]+ is not supported\b|"
                         # Triton's launcher: the kernel wants more shared memory than this GPU has
                         r"OutOfResources\([^)]*shared memory|"
                         # a CUDA kernel's own check: "requires >=128KB smem per block (have 101376)"
                         r"\brequires? >= ?\d+ ?[KM]i?B (?:of )?(?:smem|shared memory)\b[^\n]{0,30}\(have \d+\)|"
                         # ggml: "CUDA kernel mul_mat_q has no device code compatible with CUDA arch 520"
                         r"has no device code compatible with CUDA arch|"
                         # a kernel library's table of GPUs without this one (AITER: "Unknown GPU architecture: gfx1101");
                         # rocBLAS without kernels (Tensile's library) for this GPU's gfx target
                         r"\bUnknown GPU architecture\b|\bCould not initialize Tensile host\b|"
                         # Triton's compiler asserting on a compute capability it has no MMA for
                         r"\bcomputeCapability not supported\b|"
                         # Triton's backend without the conversion of an FP8 type for this GPU (AMD's fnuz-only GPUs)
                         r"\bUnsupported conversion from 'f8\w*' to\b|"
                         r"\bTensileLibrary\w*\.dat\b[^\n]*\bfor GPU arch\b|"
                         # HIP: the code object has no kernel of that name for this GPU
                         r"\bhip\w*\.cpp:\d+ *: *\d+ us: +Cannot find Symbol with name\b"),
    ("flashinfer_jit", r"flashinfer[\w./]*\b.*(?:jit|ninja|nvcc|compil|build|cubin|cached_ops)|(?:ninja|nvcc).*flashinfer|"
                       # ptxas failing on the PTX it was given ("Arguments mismatch for instruction 'mov'")
                       r"\bptxas\b.*\b(?:error|fatal)\b|"
                       # nvcc's own diagnostics, and a built kernel image the driver refuses to load
                       # (not a package's own source build: its sources sit under csrc/)
                       r"^(?=.*/jit/|(?!.*/csrc/))\S+\.(?:cu|cuh|h|hh|hpp|inl)\(\d+\): error\b|^(?!.*/csrc/).*\b\d+ errors? detected in the compilation of\b|"
                       # SGLang's JIT kernel loader (sglang/kernels/jit) whose ninja build failed
                       r"\bFailed to build JIT module\b|"
                       r"^LLVM ERROR: |"
                       # a kernel the compiler cannot fit on the GPU (ROCm Triton: "stack frame size (556488) exceeds limit")
                       r"\bstack frame size \(\d+\) exceeds limit\b|"
                       # an assertion in Triton's MLIR compiler (its lib/Analysis, lib/Dialect, ... sources)
                       r"/lib/(?:Analysis|Conversion|Dialect|Target)/[\w/]+\.cpp:\d+: .*Assertion .* failed|"
                       r"CUDA_ERROR_INVALID_IMAGE|device kernel image is invalid|\bInvalid SPIR-V module\b|"
                       r"\b(?:PI|CL|UR_RESULT)_ERROR_BUILD_PROGRAM_FAILURE\b|"
                       # an assertion in a JIT runtime's own code (DeepGEMM's jit/kernel_runtime.hpp: the
                       # compiler's exit code), not in a kernel's header it includes (jit/../include/)
                       r"Assertion (?:error|exception|failed)\W+[^\s()]*/jit/(?!\.\.)[\w.-]+\.(?:hpp|h|cuh|cpp|cu|cc):\d+|"
                       r"FLASHINFER_\w+.*(?:error|fail)|Ninja build failed|ninja: build stopped|Command '\['ninja'|_run_ninja_build|"
                       # torch's extension builder finds no ninja to build with
                       r"Ninja is required to load C\+\+ extensions|"
                       # a compiler's diagnostic (not one of a package's own source build under csrc/)
                       + _NOT_SOURCE_BUILD + r".*\bfatal error: [\w./-]+\.h: No such file|"
                       + _NOT_SOURCE_BUILD + r"[\w./-]+\.(?:h|hh|hpp|cuh|cu|cpp|cc):\d+(?::\d+)?: (?:fatal )?error: |"
                       + _NOT_SOURCE_BUILD + r".*\bcompilation terminated|error: command '[^']*' failed|nvcc fatal|"
                       r"Could not find nvcc|nvcc: not found|CUDA_HOME environment variable is not set|invalid ELF header|"
                       # oneDNN (torch's CPU kernels) could not generate a JIT kernel for this call
                       r"\bUnable to get JIT kernel for\b|"
                       r"requires CUDA >= ?[\d.]+|cubin_loader|Download failed|Error building extension|"
                       # the link step of a build, and a JIT-built library (FlashInfer's cache) that does not load
                       r"collect2: error: ld returned|"
                       r"Failed to load dynamic shared library\b[^\n]*(?:flashinfer|cached_ops|torch_extensions|/jit/)|"
                       # a JIT cache's file that is missing or does not load (a torch extension, Triton's cache)
                       r"/torch_extensions/\S+\.so: cannot open shared object file|"
                       r"No such file or directory: '[^']*/\.triton/cache/|"
                       # a header the build needs is missing, however it is reported
                       r"\b[\w/.-]+\.(?:h|hh|hpp|cuh)\b['\"`]?:? (?:not found|is missing|missing|No such file)"),
    # Dynamo's footer and user-code listing without a named exception: most often a graph break
    # (Dynamo prints them under any error raised while it compiles: a named arch or JIT failure
    # above wins)
    ("dynamo_unsupported", r"Set TORCHDYNAMO_VERBOSE=1 for the internal stack trace|^\s*from user code:\s*$"),
    # weaker communication vocabulary: the fabric (InfiniBand/RDMA, NCCL's IB transport), the
    # c10d watchdog that reports a collective's CUDA error, a CUDA error raised by the host code of
    # a communication library (not by one of its compute kernels under kernels/)
    ("nccl_comm", r"\bIB (?:transport|device|port|HCA|NIC)s?\b|InfiniBand|\bRDMA\b|\bibverbs\b|\bNET/IB\w*\b|"
                  r"Got completion from peer|\bvendor err \d+|Process group watchdog|\bgot completion with error\b|"
                  r"(?:CUDA error|Cuda failure):? (?![^\s']*/kernels/)[^\s']*(?:DeepEP|deep_ep|mscclpp|nvshmem|/nccl)|"
                  # ... or by a kernel that moves data between GPUs (intra-/inter-node dispatch and combine)
                  r"(?:CUDA error|Cuda failure|Assertion failed):? [^\s']*/(?:intra|inter)node\w*\.cu\b"),
    # wrappers SGLang prints around a failed capture: only when nothing more specific is found
    ("cuda_graph_capture", r"Capture (?:\w+ )?(?:cuda|CUDA|cpu|CPU) graph failed|CUDA graph capture failed|Piecewise CUDA Graph failed|"
                           # TGI: "Decode cuda graph warmup failed"
                           r"\bcuda graph warmup failed\b|"
                           r"graph capture|cudagraph|capture_end"),
    ("startup_hang", r"[Ww]atchdog timeout|Failed to wait for (?:all )?[\w ]{1,30} to be ready|(?:never|did not|didn't) become ready\b|soft watchdog|not responding|Timeout while waiting for|timed out after \d+|Timed out waiting|"
                     r"DistStoreError|waitForInput|No available shared memory broadcast block|deadlock(?! in distributed execution)|\bTimeoutError\b|"
                     # SGLang's router giving up on its workers: "Timeout 300s waiting for workers [...] to become healthy"
                     r"\bTimeout \d+s waiting for\b|\btimeout scanning server log\b|\bwaiting for workers\b[^\n]{0,200}\bto become healthy\b|"
                     # a request of the start-up (the warm-up's) that got no answer in its time
                     r"\bRead timed out\. \(read timeout=\d+|"
                     # Slurm ending the job at its time limit (before a ready server; once served, `other`)
                     r"\bCANCELLED AT \S+ DUE TO TIME LIMIT\b"),
)
_RULES: list[tuple[str, re.Pattern]] = [
    (c, re.compile(p, re.MULTILINE | (0 if c.startswith("dynamo") else re.IGNORECASE))) for c, p in _RULE_SRC
]
# A kernel's fault (an illegal or misaligned address, a bad launch): a bug of the code that ran,
# named "other" where no rule or evidence names the machinery (custom all-reduce, a capture) it was in.
# (Also a kernel library without an instance for the model's shape: "failed to dispatch head_dim 96".)
_KERNEL_FAULT = re.compile(r"an illegal memory access was encountered|cudaErrorIllegalAddress|misaligned address|"
                           r"\bCUDBG_EXCEPTION_WARP_(?:ILLEGAL_ADDRESS|MISALIGNED)\b|"  # the CUDA coredump's report
                           r"unspecified launch failure|an illegal instruction was encountered|CUDA error: invalid argument|"
                           r"\bfailed to dispatch (?:head_dim|head dim|page_size|group_size|\w+_size) \d+|"
                           # DeepGEMM's table of kernels without this case: "Unknown cases: sf.dtype=..., arch=90a"
                           r"\bUnknown cases?: \w+|"
                           # ROCm's word for a kernel's bad access
                           r"\bMemory access fault by GPU node-\d+|\binvalid resource handle\b")
_CAPTURE_WRAPPER = re.compile(r"Capture (?:\w+ )?(?:cuda|CUDA|cpu|CPU) graph failed|CUDA graph capture failed|Piecewise CUDA Graph failed", re.I)
# Exceptions and lines that only say that something else failed: never the cause.
_WRAPPER = re.compile(
    r"Engine core initialization failed|Engine process failed to start|See (?:the )?(?:stack trace|root cause) \(?above\)?|"
    r"EngineCore encountered (?:an issue|a fatal error)|"
    r"ShardCannotStart|Shard \d+ failed to start|hit an exception|ChildFailedError|^(?:\w+\.)*SystemExit\b|KeyboardInterrupt|"
    r"Initialization failed\. warmup error|Error when initializing model|Received sigquit|scheduler is dead|"
    r"got fatal signal from worker|Got fatal signal|Worker proc \S+ died|Exception in \w+:?$|"
    r"^Error: \w+$|Some NCCL operations have failed or timed out|we are taking the entire process down|"
    r"encountered an error\.?$|Shard complete standard error output|Error executing method \w+\. This might cause deadlock|"
    r"The Inner error is reported as above", re.I)
# Wrappers that quote the cause: the quoted text is classified (and reported) first.
_INNER = [re.compile(p) for p in (
    r"Capture (?:\w+ )?(?:cuda|CUDA|cpu|CPU) graph failed:?\s*(?P<inner>.+)",
    r"Piecewise CUDA Graph failed with error:?\s*(?P<inner>.+)",
    r"Worker failed with error '(?P<inner>.+)'",
    r"failed with error: (?P<inner>.+)",
)]
_CAPTURE_FRAME = re.compile(r"capture_(?:cuda|cpu|decode|prefill)_graph|(?:cuda|cpu)_graph_runner|piecewise_cuda_graph|"
                            r"init_cuda_graphs|capture_one_batch_size|capture_model|^capture(?:_end|_begin)?$|torch/cuda/graphs\.py")
_NCCL_FRAME = re.compile(r"init_torch_distributed|initialize_model_parallel|init_model_parallel_group|pynccl|ncclComm\w*|"
                         r"ncclGetUniqueId|custom_all_reduce|init_process_group|mscclpp|nvshmem|"
                         r"flashinfer/comm/|mnnvl|all_?reduce|"
                         r"_symmetric_memory|symm_mem")  # torch's symmetric memory (its rendezvous), under vLLM's all-reduce
_ARGS_CODE = re.compile(r"sglang/srt/(?:server_args\.py|arg_groups/)|vllm/engine/arg_utils\.py|vllm/config|"
                        r"tensorrt_llm/llmapi/llm_args\.py|text_generation_server/cli\.py|"
                        # a launcher's module of argument checks by name (ms-swift's argument/train_args.py)
                        r"\w_args\.py$")
# A refused combination of settings, in the words argument checks use, when the exception's frames
# (server_args, arg_utils, config) are not in the excerpt: a refusal idiom and, near it, the name of
# a setting (a --flag, a server argument's snake_case name, an "attention backend" or the like).
_REFUSAL_EXC = re.compile(r"(?:^|\.)(?:ValueError|AssertionError|NotImplementedError|KeyError|RuntimeError|\w*(?:Config|Argument|Validation)Error)$")
_REFUSAL = re.compile(
    r"\bis not supported (?:with|when|together|in combination|for (?:this|the) (?:configuration|combination))|"
    r"\b(?:is|are) only supported (?:with|when|for|if|in)\b|\bonly supports?\b|\b(?:must|should) (?:be|not be|have|match)\b|"
    r"\bcan(?:not|'t|not be) (?:be )?(?:used|enabled|combined|set|specified)\b|\brequires?\b|\b(?:not |in)compatible with\b|"
    r"\bdoes not support (?:the |this )?(?:\w+ )?(?:configuration|combination|option|mode|setting)|"
    r"\byou (?:have )?(?:explicitly )?(?:specified|set|passed|chose)\b|\bbut got\b|\bmutually exclusive\b|"
    r"\bplease (?:set|use|specify|pass|remove|disable|enable|increase|decrease|reduce|raise|lower)\b|\binvalid (?:value|choice|option|combination|setting)s?\b|"
    r"\bdoes not support\b[^.\n]{0,80}\byet\b|\bis (?:greater|larger|bigger|smaller|less) than the (?:derived|maximum|max|allowed|supported)\b|\bnot a valid\b|\bexpected (?:one of\b|[\w-]+(?:, [\w-]+)+,? or [\w-]+)|\bcho(?:o)?se from\b|\b(?:is|are) not (?:yet )?supported\b|\bunsupported (?:value|option|combination)\b|"
    # "Only {'a', 'b'} backends are supported ... Got attention_backend=c"
    r"\bonly\b[^.\n]{0,80}\b(?:is|are) (?:currently )?supported\b|\bgot [a-z]\w*=", re.I)
_SETTING = re.compile(
    r"(?<![\w-])--[a-z][\w-]+|"
    r"\b(?:attention|attn|moe|sampling|all2all|a2a|quantization|kv[-_ ]cache|load|speculative|spec|lora|grammar|"
    r"tool[-_ ]call|reasoning|prefill|decode|cuda[-_ ]graph|compilation|distributed[-_]executor)[-_ ]?"
    r"(?:backend|format|method|dtype|algorithm|parser|runner|mode|level)s?\b|"
    r"\b(?:[tdpec]p|[TDPE]P|tensor[-_]parallel|pipeline[-_]parallel|data[-_]parallel|expert[-_]parallel)[-_ ]sizes?\b|"
    r"\b(?:tensor|pipeline|context|expert)_model_parallel_size\b|"  # Megatron's names
    r"\bnum[-_]shards?\b|\bmax[-_](?:model[-_]len|num[-_]seqs|num[-_]batched[-_]tokens|running[-_]requests|total[-_]tokens|"
    r"input[-_](?:length|tokens)|batch[-_]\w+|prefill[-_]tokens)\b|\bcontext[-_]length\b|\bchunked[-_]prefill\w*|"
    r"\benforce[-_]eager\b|\bmem[-_]fraction\w*|\bgpu[-_]memory[-_]utilization\b|\bkv[-_]cache[-_]dtype\b|"
    r"\b(?:enable|disable)[-_][a-z][\w-]+|\bdeterministic (?:inference|mode)\b|\btrust[-_]remote[-_]code\b|"
    r"\bdeployment configuration\b|\bsharded\b|\bspeculative decoding\b|\bserved[-_]model[-_]name\b|\b(?:tensor|pipeline|data|expert) parallel(?:ism)?\b|"
    # a named backend or a set of them: "only supported for TRTLLM backend", "Only {'triton', 'fa4'} backends"
    r"\b[A-Za-z][\w-]* backends?\b|\}\s*backends?\b")


def _refused_setting(exc) -> bool:
    """Whether an exception reads like an argument check refusing a combination of settings."""
    if exc is None or not exc.name or not _REFUSAL_EXC.search(exc.name):
        return False
    text = " ".join([exc.msg] + exc.cont[:3])
    for m in _REFUSAL.finditer(text):
        near = text[max(0, m.start() - 160): m.end() + 160]
        if _SETTING.search(near):
            return True
    return False


_NATIVE_CRASH = re.compile(r"Segmentation fault|Signal: \w|\*\*\* Process received signal|core dumped|Bus error|"
                           r"Illegal instruction|Aborted|SIGSEGV|SIGABRT|SIGBUS")
# (UCX, under NIXL's KV transfers and MPI, is a communication library too)
_COMM_LIB_FRAME = re.compile(r"\blib(?:nccl|mscclpp|nvshmem\w*|rccl|uc[pst])[\w-]*\.so|\bdeep_ep\w*\.\w*so\b|/nixl\b|"
                             # Mooncake's transfer engine (KV-cache transfers between instances)
                             r"/mooncake/|\btransfer_engine\b")


def _native_crash_category(bodies: list[str], at: list[int]) -> str | None:
    """A native crash (segfault, abort) whose backtrace, printed under it, runs inside a
    communication library (libnccl, libmscclpp, libnvshmem, DeepEP): a communication failure."""
    for k in at:
        if _NATIVE_CRASH.search(bodies[k]) and any(_COMM_LIB_FRAME.search(b) for b in bodies[k + 1: k + 40]):
            return "nccl_comm"
        if _NATIVE_CRASH.search(bodies[k]) and _COMM_CALL.search(_crashed_in(bodies, k) or ""):
            return "nccl_comm"  # the crashing thread's innermost Python frame is a collective's call
    return None


# faulthandler's dump of the thread that crashed, innermost frame first
_CURRENT_THREAD = re.compile(r"^Current thread 0x[0-9a-f]+ \(most recent call first\):")
_DUMP_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line \d+ in (?P<func>\w+)')
_COMM_CALL = re.compile(r"torch/distributed/distributed_c10d\.py:(?:all_reduce|all_gather\w*|reduce_scatter\w*|broadcast|"
                        r"all_to_all\w*|barrier|send|recv|reduce)$|pynccl\w*\.py:|custom_all_reduce\w*\.py:")


def _crashed_in(bodies: list[str], k: int) -> str | None:
    """'path:function' of the innermost frame faulthandler printed for the thread that crashed at line k."""
    top = next((j for j in range(k + 1, min(len(bodies), k + 80)) if _CURRENT_THREAD.match(bodies[j])), None)
    m = _DUMP_FRAME.match(bodies[top + 1]) if top is not None and top + 1 < len(bodies) else None
    return f"{m['path'].replace(chr(92), '/')}:{m['func']}" if m else None


def _rule(text: str) -> tuple[str | None, str | None]:
    """(category, the line that matched) of the first rule found in ``text``."""
    if not text:
        return None, None
    for cat, pat in _RULES:
        m = pat.search(text)
        if m:
            s = text.rfind("\n", 0, m.start()) + 1
            e = text.find("\n", m.end())
            return cat, text[s: e if e >= 0 else None].strip()
    return None, None


# Vocabularies of the categories: the last resort when no rule above names the failure. Each
# entry is one word family; a text scores a category once per family found in it. DeepEP's name
# counts half: its failures are as often a compute kernel's (a layout kernel, a token-count
# assertion: "other") as its communication's.
_VOCAB_SRC = {
    "nccl_comm": (r"\bNCCL\b|\bnccl[A-Z_]\w*|\bpynccl\b", r"NVSHMEM|nvshmem", (r"\bDeepEP\b|\bdeep_ep\b", 0.5), r"MSCCL|mscclpp",
                  r"\ball[-_ ]?reduce|\ball[-_ ]?gather|\breduce[-_ ]scatter|\ball[-_ ]?to[-_ ]?all\b|\ball2all\b",
                  r"\bP2P\b|\bpeer[- ](?:access|mapping|to[- ]peer)|\bIPC (?:handle|memory)|cudaIpc\w*",
                  r"InfiniBand|\bIB\b|\bRDMA\b|\bibv_\w+|ibverbs|\bmlx5", r"\bcollective\b|[Pp]rocess ?[Gg]roup|\bc10d\b|\bgloo\b",
                  r"\bNVLink\b|\bNVLS\b|\bMNNVL\b"),
    "flashinfer_jit": (r"\bJIT\b|\bjit\b|\w_jit\b|\bjit_\w", r"\bninja\b", r"\bnvcc\b|\bnvrtc\w*|\bcicc\b|\bg\+\+|\bgcc\b",
                       r"cpp_extension|load_inline|[Bb]uilding extension",
                       r"(?<![\w.])(?!Compile with .TORCH_USE_CUDA_DSA)[Cc]ompil(?:e|ing|ation|er)s?\b(?! with .TORCH_USE_CUDA_DSA)",
                       # a header, not the location of code that ran ("buffer.hpp:1481" in an assertion)
                       r"\b[\w-]+\.(?:h|cuh|hpp)\b(?!:\d)|\bheaders?\b", r"\bcubins?\b"),
    "cuda_graph_capture": (r"\bcaptur(?:e|es|ing|ed)\b", r"\bcuda ?graphs?\b|\bcudagraphs?\b|\bCUDAGraph\w*", r"\bgraph replay\b|\breplay\(\)"),
    "oom": (r"out of memory|\bOOM\b", r"\bKV[ _-]?cache\b|\bkv_cache\b", r"\ballocat(?:e|es|ed|ion|or)\b",
            r"\bmem(?:ory)?[-_ ](?:fraction|utilization|pool|usage)|gpu_memory_utilization|mem_fraction"),
    "arch_unsupported": (r"\bsm_?\d{2,3}[af]?\b|\bSM ?\d{2,3}[af]?\b", r"compute capability", r"kernel image|\bno binary for\b",
                         r"(?<![\w.])arch(?:itecture)?s?\b(?!\.)"),
    "dynamo_other": (r"\b_?dynamo\b|Dynamo", r"\b_?inductor\b|Inductor", r"torch\.compile|\btorch_compile\b|compile_wrapper",
                     r"\bFX graph\b|\bfx graph\b|\bgraph break"),
    "startup_hang": (r"\btimed? ?out\b|\btimeout\b", r"\bhang(?:s|ing)?\b|\bhung\b|\bstuck\b|\bdeadlock(?! in distributed execution)", r"\bwaiting for\b"),
}
_VOCAB = {c: [(re.compile(p[0] if isinstance(p, tuple) else p, re.I if c != "flashinfer_jit" else 0),
                 p[1] if isinstance(p, tuple) else 1.0) for p in ps] for c, ps in _VOCAB_SRC.items()}
# Package paths of frames and the category whose machinery they are.
_FRAME_VOCAB = (
    ("nccl_comm", re.compile(r"(?:^|/)(?:nccl|mscclpp|nvshmem|pynccl\w*|custom_all_reduce\w*|"
                             r"distributed_c10d|device_communicators)(?:/|\.py|$)|torch/distributed/|"
                             r"flashinfer/comm/|/\w*(?:all_?reduce|mnnvl)\w*\.py$")),
    ("flashinfer_jit", re.compile(r"flashinfer/jit/|deep_gemm/jit/|torch/utils/cpp_extension|triton/(?:runtime/build|backends/nvidia/compiler)")),
    ("dynamo_other", re.compile(r"torch/_(?:dynamo|inductor)/")),
    ("cuda_graph_capture", re.compile(r"cuda_graph_runner|cpu_graph_runner|piecewise_cuda_graph|torch/cuda/graphs\.py|cudagraph")),
)
# The start-up phase a failure struck in (still in it, not after it), the category of its
# machinery and the weight: a failure nothing else explains that struck in the middle of a
# CUDA-graph capture is a capture failure (as SGLang's capture wrapper says when it is there).
_PHASE_VOCAB = (("cuda_graph_capture", re.compile(r"^in .*(?:CUDA|CPU)-graph capture"), 4.0),
                ("nccl_comm", re.compile(r"^in NCCL init"), 1.5), ("flashinfer_jit", re.compile(r"^in a FlashInfer JIT build"), 1.5),
                ("dynamo_other", re.compile(r"^in (?:piecewise )?torch\.compile"), 1.5))


def _vocabulary(units: list[tuple[float, str]], frames: list[Frame], phase: str | None) -> dict[str, float]:
    """Scores of the categories: for each (weight, text) unit the weight times the number of a
    category's word families found in it; frames by their package paths; the failing phase."""
    score: dict[str, float] = {}
    for w, text in units:
        if not text:
            continue
        for cat, rxs in _VOCAB.items():
            hits = sum(f for rx, f in rxs if rx.search(text))
            if hits:
                score[cat] = score.get(cat, 0.0) + w * hits
    paths = [short_path(f.path.replace("\\", "/")) for f in frames]
    for cat, rx in _FRAME_VOCAB:
        if any(rx.search(p) for p in paths):
            score[cat] = score.get(cat, 0.0) + 2.0
    for cat, rx, w in _PHASE_VOCAB:
        if phase and rx.search(phase):
            score[cat] = score.get(cat, 0.0) + w
    return score


def _vocabulary_category(score: dict[str, float]) -> str | None:
    """The category whose vocabulary clearly dominates, if one does."""
    ranked = sorted(score.items(), key=lambda kv: -kv[1])
    if not ranked or ranked[0][1] < _VOCAB_MIN:
        return None
    if len(ranked) > 1 and ranked[0][1] < _VOCAB_LEAD * ranked[1][1]:
        return None
    return ranked[0][0]


_VOCAB_MIN = 4.0  # more than one word family in the causal line alone
_VOCAB_LEAD = 1.5


# --- summaries --------------------------------------------------------------------------------

_LIBS = {
    "libcuda.so": "the NVIDIA driver library", "libnvidia-ml.so": "NVML, part of the NVIDIA driver",
    "libcudart.so": "the CUDA runtime", "libnccl.so": "NCCL", "libcublas.so": "cuBLAS", "libcublasLt.so": "cuBLASLt",
    "libcudnn.so": "cuDNN", "libnvrtc.so": "NVRTC, CUDA's runtime compiler", "libcusparse.so": "cuSPARSE",
    "libnvshmem_host.so": "NVSHMEM", "libibverbs.so": "the InfiniBand verbs library",
}


def _rephrase(text: str) -> str:
    """A cause in words where the raw message names it badly."""
    m = re.search(r"Command '\['(\S*ptxas)'.*?--gpu-name=(sm_\w+).*returned non-zero exit status (\d+)", text)
    if m:
        who = "Triton's ptxas" if "triton" in m.group(1) else "ptxas"
        return f"{who} could not assemble a kernel for {m.group(2)} (exit status {m.group(3)})"
    m = re.search(r"Command '\['ninja'(.*?)\]' returned non-zero exit status (\d+)", text)
    if m:
        mod = re.search(r"cached_ops/(\w+)/build\.ninja", m.group(1))
        fi = "FlashInfer's " if "flashinfer" in m.group(1) else ""
        what = f"{fi}JIT build of the {mod.group(1)} module" if mod else f"{fi}JIT build of a kernel module"
        return f"{what} failed (ninja exit status {m.group(2)})"
    if text.strip() == "Killed":
        return "the process was killed (SIGKILL), most likely by the kernel's OOM killer"
    m = re.search(r"(lib[\w+.-]*?\.so(?:\.[\d.]+)?): cannot open shared object file(?:: (.*))?", text)
    if m:
        lib = m.group(1)
        what = next((v for k, v in _LIBS.items() if lib.startswith(k)), None)
        return f"{lib}{f' ({what})' if what else ''} cannot be loaded: cannot open shared object file" + (
            f": {m.group(2)}" if m.group(2) else "")
    return text


def _clean_summary(s: str) -> str:
    s = " ".join(s.split())
    return s[:300]


_BUILD_HEAD = re.compile(r"Ninja build failed|Command '\['ninja'|CalledProcessError.*\bninja\b")
_DIAG = re.compile(r"nvcc fatal\s*:.*|fatal error:.*|\S+:\d+:\d+: error: .*|ptxas fatal.*|(?<!\w)error\s*:.*")


def _inner(text: str) -> str | None:
    for rx in _INNER:
        m = rx.search(text or "")
        if m and len(m["inner"].strip()) > 3:
            return m["inner"].strip()
    return None


_PYDANTIC_HEAD = re.compile(r"\b\d+ validation errors? for \w+\s*$")
_PYDANTIC_DETAIL = re.compile(r"^(?:Value|Assertion) error, (.+?)(?: \[type=\w+.*)?$")


def _exc_summary(exc: _Exc, lines: list[_Line], matched: str | None, from_head: bool) -> str:
    head = exc.head
    msg = exc.msg.strip()
    if _PYDANTIC_HEAD.search(head):
        # "ValidationError: 1 validation error for ModelConfig" names only the class: its
        # "Value error, ..." line says what was refused
        detail = next((m.group(1) for c in exc.cont for m in [_PYDANTIC_DETAIL.match(c)] if m), None)
        if detail:
            return _rephrase(f"{head}: {detail}")
    nested = exc.nested
    if nested and (not msg or len(msg) < 12 or re.search(r"Could not load|import attempts|see (?:above|below)", " ".join(exc.cont), re.I)):
        # 'ImportError: ... Could not load any common_ops library ... Error details from previous
        # import attempts: - ImportError: libcuda.so.1: cannot open ...': the nested cause is the news.
        return _rephrase(nested)
    inner = _inner(head)
    if inner:
        return _rephrase(inner) + (" (during CUDA-graph capture)" if _CAPTURE_WRAPPER.search(head) else "")
    if not msg:
        more = next((c for c in exc.cont if c and c != "from user code:"), None)
        if more:
            return _rephrase(f"{exc.name}: {more}")
        if matched and not from_head and exc.name.split(".")[-1] in ("EOFError", "BrokenPipeError", "ConnectionResetError"):
            # a pipe whose other end died (a launcher reading its dead scheduler's pipe): the line
            # that named the category says why it died
            return _rephrase(matched)
        # 'AssertionError' alone: say which assertion, from the frame's source line.
        where = _origin(exc.frames, False)[0]
        src = exc.raise_src.splitlines()[0] if exc.raise_src else None
        if src:
            return f"{exc.name} at {where}: {src}" if where else f"{exc.name}: {src}"
        return f"{exc.name} raised" + (f" in {where}" if where else "") + " (no message)"
    if _BUILD_HEAD.search(head):
        # 'Ninja build failed' / CalledProcessError(['ninja', ...]): the compiler's own complaint
        diag = next((m.group(0) for c in exc.cont + [ln.body for ln in lines[max(0, exc.idx - 60): exc.idx]]
                     for m in [_DIAG.search(c)] if m), None)
        if diag:
            return f"JIT build failed (ninja): {' '.join(diag.split())}"
    if exc.cont and re.search(r"[\w.]+:\d+\s*$", msg):
        # 'Failed: CUDA error .../deep_ep.cpp:200' with the CUDA message on the next line
        return _rephrase(f"{head} {exc.cont[0]}")
    if matched and not from_head and matched not in head:
        # a generic head ('Internal Triton PTX codegen error') whose message names the cause
        return _rephrase(f"{head}: {matched}")
    return _rephrase(head)


def _evidence_summary(lines, body_at, matched, ev, live, truncated, frame_at, origin, raised_at) -> str:
    """One line for a failure without a Python exception line of its own."""
    if matched and re.search(r"Set TORCHDYNAMO_VERBOSE|from user code", matched) and origin:
        src = truncated.raise_src.splitlines()[0] if truncated is not None and truncated.raise_src else ""
        return f"torch.compile (Dynamo) failed in user code at {origin}" + (f": {src}" if src else "") + \
            "; the exception line is cut off"
    if matched and matched.startswith("what():"):
        # a C++ exception: "terminate called after throwing an instance of 'T'" then "what(): msg"
        typ = next((m.group(1) for k in ev for m in [re.search(r"throwing an instance of '([^']+)'", body_at(k))] if m), None)
        msg = matched[len("what():"):].strip()
        return f"C++ exception {typ}: {msg}" if typ else f"C++ exception: {msg}"
    if matched and re.match(r"\[\d+/\d+\] ", matched):
        return "a JIT build step failed (ninja): " + matched[:160]
    if matched:
        inner = _inner(matched)
        if inner:
            return _rephrase(inner) + (" (during CUDA-graph capture)" if _CAPTURE_WRAPPER.search(matched) else "")
        if not _WRAPPER.search(matched) and not _FRAME_RE.match(matched):
            return _rephrase(matched)
    plain = [k for k in ev if not _WRAPPER.search(body_at(k)) and _TB_START not in body_at(k)]
    if truncated is not None and not plain:
        tb = next((k for k in live if _TB_START in body_at(k)), None)
        header = re.sub(r":?\s*Traceback \(most recent call last\):?", "", body_at(tb) if tb is not None else "").strip(" :")
        if not header:
            # "ERROR ... Error when initializing model" printed above a bare "Traceback" line
            header = next((body_at(k).strip() for k in reversed(ev) if (tb is None or k < tb) and
                           _WRAPPER.search(body_at(k))), "")
        header = re.sub(r":?\s*Traceback \(most recent call last\):?", "", header).strip(" :")
        src = truncated.raise_src.splitlines()[0] if truncated.raise_src else ""
        if src.startswith("raise "):
            where = f"at `{src}` in {raised_at}"
        else:
            where = f"in {origin}" if origin else ""
        return (f"{header}; the traceback is cut off before its exception line {where}" if header else
                f"a traceback cut off before its exception line {where}").strip()
    cands = [k for k in ev if not _WRAPPER.search(body_at(k))] or ev or live
    pick = next((k for k in cands if not frame_at[k]), cands[0] if cands else None)
    return _rephrase(body_at(pick).strip()) if pick is not None else "the server failed"


def _frame_category(exc: _Exc) -> str | None:
    frames = exc.frames
    if not frames:
        return None
    paths = [f.path.replace("\\", "/") for f in frames]
    if any(re.search(r"flashinfer/jit/|flashinfer/compilation_context\.py|deep_gemm/jit/|torch/utils/cpp_extension\.py|"
                     r"triton/runtime/build\.py", p)
           for p in paths):
        return "flashinfer_jit"
    if re.search(r"flashinfer/", paths[-1]) and re.fullmatch(r"get_\w+_module", frames[-1].func):
        return "flashinfer_jit"  # FlashInfer's module getters build or load the module's JIT kernels
    # code compiled at run time ('<string>': eval, exec, a generated launcher) is not where it raised
    real = [p for p in paths if not p.startswith("<")] or paths
    if re.search(r"triton/compiler/|triton/backends/\w+/compiler\.py|triton/language/", real[-1]):
        # raised inside Triton's kernel compiler, or in its language's functions (which run only
        # while a kernel's source is compiled: "arange's range must be a power of 2"): a JIT build failed
        return "flashinfer_jit"
    exc_name = (exc.name or "").split(".")[-1]
    if exc_name in ("AssertionError", "ValueError") and _ARGS_CODE.search(paths[-1]):
        return "bad_flag"  # ServerArgs refusing a combination of flags argparse accepted one by one
    if exc_name == "JSONDecodeError" and any(_ARGS_CODE.search(p) for p in paths):
        return "bad_flag"  # a JSON-valued flag that is not JSON
    # raised inside torch.compile's own machinery, or in the code Inductor generated (its cache)
    if re.search(r"torch/_(?:dynamo|inductor|functorch)/|/inductor_cache/|/torchinductor_[^/]+/|/torch_compile_cache/", real[-1]):
        return "dynamo_other"
    gen = [i for i, p in enumerate(real) if re.search(r"/inductor_cache/|/torchinductor_[^/]+/|/torch_compile_cache/", p)]
    if gen and all(re.search(r"(?:^|/)torch/", p) for p in real[gen[-1] + 1:]) and \
            not re.search(r"\bCUDA error\b|CUBLAS_STATUS|CUDNN_STATUS", exc.head or ""):
        # the code Inductor generated called torch with what torch refused (not a kernel's or a
        # library's failure while the compiled code ran)
        return "dynamo_other"
    # (not a traceback cut merely somewhere in the KV cache's set-up, _initialize_kv_caches,
    # mem_get_info: a block size refused, Dynamo's refusal in the profiling run and a HIP error
    # were cut there as often as the memory)
    if re.fullmatch(r"_?(?:check|ensure|verify|assert)_(?:enough|sufficient|available)_\w*(?:memory|kv_cache|blocks)\w*",
                    frames[-1].func):
        return "oom"  # raised by the check that the memory (the KV cache's) suffices: "_check_enough_kv_cache_memory"
    if frames[-1].func == "bind" and re.search(r"zmq/|socket|asyncio/|uvicorn/|torch/distributed/", real[-1]):
        return "port_in_use"  # raised binding a socket (zmq, asyncio, c10d's store): the address is taken
    names = [f.func for f in frames + exc.user_frames] + [short_path(p) for p in paths]
    runner = [f for f in frames if re.search(r"(?:cuda|cpu)_graph_runner", f.path)]
    replaying = bool(runner) and runner[-1].func.startswith("replay")  # a graph captured before, replayed
    if any(_CAPTURE_FRAME.search(x) for x in names) and not replaying:
        return "cuda_graph_capture"
    if any(_NCCL_FRAME.search(x) for x in names):
        return "nccl_comm"
    if re.search(r"vllm/compilation/|sglang/srt/(?:model_executor/)?compilation/", real[-1]):
        return "dynamo_other"  # raised in the engine's own torch.compile integration (its piecewise backend)
    return None
