import { useState } from "preact/hooks";

/** A form's one action: busy while it runs, its failure kept to show (cleared by the next run). */
export function useAction(work: () => Promise<void>): {
  busy: boolean;
  failure: unknown;
  run: () => Promise<void>;
} {
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState<unknown>();
  const run = async () => {
    setBusy(true);
    setFailure(undefined);
    try {
      await work();
    } catch (error) {
      setFailure(error);
    } finally {
      setBusy(false);
    }
  };
  return { busy, failure, run };
}
