"""The runner's timed batches (a part of runner.Harness): map the inputs the trusted checker
writes, run the calls of a batch back to back, and say where the outputs lie. Nothing here is
trusted: the judge reads no time from it and the checker reads the outputs itself."""
from __future__ import annotations

import time
import traceback

from evaluator.wire.messages import Reply
from evaluator.runner.live import one_line, overlap, plain_tensor, raw, span, type_name


class BatchCalls:
    def map_inputs(self, msg):
        """Views of every call's inputs in the memory the checker writes: its device buffer
        through CUDA IPC, or on the CPU its file, mapped read-only."""
        import torch

        try:
            nbytes = int(msg["nbytes"])
            if self.device == "cuda":
                from evaluator.wire.ipc import Exporter, Mapper

                self.mapper = getattr(self, "mapper", None) or Mapper()
                self.exporter = getattr(self, "exporter", None) or Exporter()
                raw = self.mapper.bytes_view(msg["desc"], nbytes)
            else:
                import warnings

                import numpy as np

                mm = np.memmap(msg["path"], dtype=np.uint8, mode="r", shape=(nbytes,))
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # read-only on purpose: writes fault
                    raw = torch.from_numpy(mm)
            step = int(msg["slot_bytes"])
            self.slots = [tuple(raw[k * step + o: k * step + o + n].view(getattr(torch, d)).view(s)
                                for d, s, o, n in msg["layout"]) for k in range(int(msg["slots"]))]
            self.batch_outputs = []
        except BaseException as e:  # noqa: BLE001
            self.fail("crash", f"mapping the inputs failed: {one_line(e)}", traceback.format_exc())
        self.send(t=Reply.MAPPED)

    def batch(self, msg):
        """The calls of one timed batch, back to back with no round trip between them. On the GPU
        the outputs are described (`batch_described`) while the device still runs the calls, so
        that the judge's checker can look them up before the last kernel ends; only the
        synchronize and a short `batch_done` follow the last kernel. On the CPU the outputs are
        copied into the output file and `batch_done` says so. `device_ms` (CUDA events, or the
        CPU's clock, around the calls) is read by the judge from the trusted baseline runner only."""
        import torch

        stamps = [time.monotonic()]  # for the operator's diagnostics only: never part of a score
        count = int(msg["count"])
        fn = self.fns.get(msg.get("fn"), self.fn) if self.fns else self.fn
        self.batch_outputs = []
        try:
            if self.device == "cuda":
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                outs = [fn(*self.slots[k]) for k in range(count)]
                end.record()
                stamps.append(time.monotonic())
                outs, problems, meta, descs = self._describe(outs)
                self.batch_outputs = outs
                self.send(t=Reply.BATCH_DESCRIBED, outputs=descs, meta=meta, problems=problems[:16])
                stamps.append(time.monotonic())
                torch.cuda.synchronize()
                stamps.append(time.monotonic())
                self.send(t=Reply.BATCH_DONE, device_ms=start.elapsed_time(end), stamps=stamps)
                return
            t = time.perf_counter()
            outs = [fn(*self.slots[k]) for k in range(count)]
            device_ms = (time.perf_counter() - t) * 1e3
            stamps.append(time.monotonic())
            outs, problems, meta, descs = self._describe(outs)
            stored = not problems and self._write([raw(o) for o in outs], int(msg.get("size", 0)))
            stamps.append(time.monotonic())
            self.batch_outputs = outs
        except BaseException as e:  # noqa: BLE001
            self.fail(self._error_code(e), f"custom_kernel raised {one_line(e)}", traceback.format_exc())
        self.send(t=Reply.BATCH_DONE, outputs=descs, meta=meta, problems=problems[:16], device_ms=device_ms,
                  stored=stored, stamps=stamps)

    def _describe(self, outs):
        """(outputs, problems, meta, descriptors): what the runner can tell of the live outputs,
        and on the GPU where each lies (the checker reads them itself)."""
        import torch

        problems, meta = [], []
        for out in outs:
            problems += self._batch_problems(out)
            meta.append({"dtype": str(out.dtype), "shape": list(out.shape), "device": out.device.type}
                        if plain_tensor(out) else None)
        if problems:
            return outs, problems, meta, None
        # the checker reads whole words from the start of each output
        outs = [o if o.is_contiguous() and o.data_ptr() % 16 == 0
                else o.clone(memory_format=torch.contiguous_format) for o in outs]
        if self.device != "cuda":
            return outs, problems, meta, None
        from evaluator.wire.ipc import IpcError

        try:
            descs = [self.exporter.export(o) for o in outs]
        except IpcError as e:
            return outs, [self._unshareable(outs, e)], meta, None
        return outs, problems, meta, descs

    def _unshareable(self, outs, error) -> list:
        """Why an output cannot be handed to the checker: most often it lies in the inputs' memory,
        which this process maps from the checker and so cannot export again."""
        inputs = span(self.slots[0][0]) if getattr(self, "slots", None) else None  # the whole mapped buffer
        if any(overlap(span(o), inputs) for o in outs):
            return ["aliases_input", "the output lies in an input's memory: return a new tensor"]
        return ["wrong_type", f"custom_kernel returned a tensor whose memory cannot be shared with the checker "
                              f"({one_line(error)}): return one from torch's CUDA allocator"]

    def _batch_problems(self, out) -> list:
        import torch

        if type(out) is not torch.Tensor:
            return [["wrong_type", f"custom_kernel returned {type_name(out)}, not a torch.Tensor"]]
        if not plain_tensor(out):
            return [["wrong_type", f"custom_kernel returned a tensor with layout {out.layout}"]]
        if out.device.type != self.device:
            return [["wrong_device", f"the output is on {out.device}, not on {self.device}"]]
        return []
