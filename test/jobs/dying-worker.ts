/**
 * A process that takes jobs of a BullMQ queue and never finishes them, for the test to kill (SIGKILL)
 * the way a poison job kills its process. Arguments: Redis URL, key prefix, lock ms, and what hangs:
 * `run` (the handler: the job is mid-run) or `give-up` (the hook: the job is being given up). It
 * prints `running <deaths>` or `giving-up <deaths>` once it is there.
 */
import { BullMqQueue } from "../../src/jobs/bullmq-queue.ts";

const [url = "", prefix = "", lockMs = "500", hangs = "run"] = process.argv.slice(2);
const forever = () => new Promise<void>(() => {});
const queue = new BullMqQueue({ url, prefix, lockMs: Number(lockMs), crashLimit: 2 });
queue.work(
  "read",
  async () => {
    process.stdout.write("running\n");
    await forever();
  },
  {
    onGaveUp: async (_data, deaths) => {
      if (hangs !== "give-up") return;
      process.stdout.write(`giving-up ${deaths}\n`);
      await forever();
    },
  },
);
