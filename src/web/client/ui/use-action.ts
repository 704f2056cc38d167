import { useState } from "preact/hooks";

/** A form's one action: busy while it runs, its failure kept to show (cleared by the next run). */
export function useAction(work: () => Promise<void>): {
  busy: boolean;
  failure: unknown;
  run: () => Promise<void>;
  /** A form's submit handler that runs the action instead of loading a page. */
  onSubmit: (event: Event) => void;
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
  const onSubmit = (event: Event) => {
    event.preventDefault();
    void run();
  };
  return { busy, failure, run, onSubmit };
}
