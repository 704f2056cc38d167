import type { MachinesList } from "../engines/machines-view.ts";
import type { OperatorApi } from "../routes/admin/operator-api.ts";

/**
 * The operator actions as the `zona` command calls them: either the operator API's face over a store
 * this process opened, or the operator API of a running server. Same arguments, same answers.
 */
export type OperatorClient = {
  [K in keyof OperatorApi]: (...args: Parameters<OperatorApi[K]>) => ReturnType<OperatorApi[K]>;
} & {
  /** Machine health, which only a running server knows: present through the operator API alone. */
  listMachines?: () => Promise<MachinesList>;
  /** Makes the running server read its configuration again (like SIGHUP): through the operator API alone. */
  reload?: () => Promise<ReloadAnswer>;
};

/** The answer of `POST /admin/v1/reload`. */
export interface ReloadAnswer {
  object: "reload";
  applied: true;
  changes: string[];
  restart_required: string[];
}

/** An operator client and how to let go of what it holds. */
export interface OperatorConnection {
  client: OperatorClient;
  /** "http" through a server's operator API, "direct" on a store opened here. */
  mode: "http" | "direct";
  close(): Promise<void>;
}
