import type { Redis, Result } from "ioredis";
import { CLOSE_SCRIPT } from "./close-script.ts";
import {
  CHANGE_SCRIPT,
  DROP_SCRIPT,
  EPOCH_SCRIPT,
  HOLD_SCRIPT,
  LOAD_SCRIPT,
  READ_SCRIPT,
  READY_SCRIPT,
  REGISTER_SCRIPT,
  SWEEP_SCRIPT,
} from "./money-scripts.ts";

declare module "ioredis" {
  interface RedisCommander<Context> {
    zonaMoneyHold(n: 0, ...args: string[]): Result<string[], Context>;
    zonaMoneyClose(n: 0, ...args: string[]): Result<number, Context>;
    zonaMoneyLoad(n: 0, ...args: string[]): Result<string[], Context>;
    zonaMoneyRegister(n: 0, ...args: string[]): Result<string[], Context>;
    zonaMoneySweep(n: 0, ...args: string[]): Result<string[], Context>;
    zonaMoneyRead(n: 0, ...args: string[]): Result<string[], Context>;
    zonaMoneyChange(n: 0, ...args: string[]): Result<string[], Context>;
    zonaMoneyEpoch(n: 0, ...args: string[]): Result<string, Context>;
    zonaMoneyReady(n: 0, ...args: string[]): Result<number, Context>;
    zonaMoneyDrop(n: 0, ...args: string[]): Result<number, Context>;
  }
}

/** Registers the money scripts on a connection. */
export function defineMoneyCommands(redis: Redis): void {
  redis.defineCommand("zonaMoneyHold", { lua: HOLD_SCRIPT });
  redis.defineCommand("zonaMoneyClose", { lua: CLOSE_SCRIPT });
  redis.defineCommand("zonaMoneyLoad", { lua: LOAD_SCRIPT });
  redis.defineCommand("zonaMoneyRegister", { lua: REGISTER_SCRIPT });
  redis.defineCommand("zonaMoneySweep", { lua: SWEEP_SCRIPT });
  redis.defineCommand("zonaMoneyRead", { lua: READ_SCRIPT });
  redis.defineCommand("zonaMoneyChange", { lua: CHANGE_SCRIPT });
  redis.defineCommand("zonaMoneyEpoch", { lua: EPOCH_SCRIPT });
  redis.defineCommand("zonaMoneyReady", { lua: READY_SCRIPT });
  redis.defineCommand("zonaMoneyDrop", { lua: DROP_SCRIPT });
}
