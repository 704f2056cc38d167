import { randomBytes } from "node:crypto";
import type { FastifyBaseLogger } from "fastify";
import { itemNotFound } from "../../errors/catalogue.ts";
import { imageLinkExpired, invalidImageLink } from "../../errors/media-errors.ts";
import type { ImageFilesRepository } from "../../store/repositories/image-files.ts";
import type { ServiceSecretsRepository } from "../../store/repositories/service-secrets.ts";
import { ImageLinks } from "./image-links.ts";

/** How long a picture answered as a link is kept. */
export const IMAGE_LINK_SECONDS = 24 * 60 * 60;
/** How often expired pictures are deleted. */
export const IMAGE_SWEEP_EVERY_MS = 5 * 60 * 1000;
const SIGNING_SECRET = "image-links";

/** A kept picture ready to send. */
export interface ServedImage {
  png: Buffer;
  /** Seconds until the link expires (for `Cache-Control`). */
  secondsLeft: number;
}

/**
 * The pictures of `response_format: url`: kept in the database with their expiry (so every
 * instance serves every link), served through signed links without a key, and deleted by a sweep
 * once expired. Pictures of `b64_json` answers never come here.
 */
export class ImageFiles {
  private readonly repo: ImageFilesRepository;
  private readonly secrets: ServiceSecretsRepository;
  private readonly now: () => Date;
  private readonly log: FastifyBaseLogger | undefined;
  private links: Promise<ImageLinks> | undefined;
  private sweeper: NodeJS.Timeout | undefined;

  constructor(deps: {
    repo: ImageFilesRepository;
    secrets: ServiceSecretsRepository;
    now: () => Date;
    log?: FastifyBaseLogger;
  }) {
    this.repo = deps.repo;
    this.secrets = deps.secrets;
    this.now = deps.now;
    this.log = deps.log;
  }

  /** Keeps a marked PNG for 24 hours; returns its signed link (path and query). */
  async keep(png: Buffer): Promise<string> {
    const links = await this.signer();
    const expires = Math.floor(this.now().getTime() / 1000) + IMAGE_LINK_SECONDS;
    const id = await this.repo.add(png, new Date(expires * 1000));
    return links.sign(id, expires);
  }

  /** The picture of a request URL: 403 for a link not signed as it is, 410 once expired. */
  async open(url: string): Promise<ServedImage> {
    const link = (await this.signer()).verify(url);
    if (!link) throw invalidImageLink();
    const secondsLeft = link.expires - Math.floor(this.now().getTime() / 1000);
    if (secondsLeft <= 0) throw imageLinkExpired();
    const kept = await this.repo.find(link.id);
    if (!kept) throw itemNotFound("This picture does not exist.");
    return { png: kept.png, secondsLeft };
  }

  /** Deletes the expired pictures; returns how many. */
  sweep(): Promise<number> {
    return this.repo.deleteExpired(this.now());
  }

  /** Sweeps every few minutes until stopped (every instance may: deleting twice is harmless). */
  startSweeper(everyMs = IMAGE_SWEEP_EVERY_MS): void {
    if (this.sweeper) return;
    this.sweeper = setInterval(() => {
      this.sweep().then(
        (deleted) => {
          if (deleted > 0) this.log?.info({ deleted }, "expired pictures deleted");
        },
        (error: unknown) => this.log?.warn({ err: error }, "could not delete expired pictures"),
      );
    }, everyMs);
    this.sweeper.unref();
  }

  stopSweeper(): void {
    clearInterval(this.sweeper);
    this.sweeper = undefined;
  }

  private signer(): Promise<ImageLinks> {
    this.links ??= this.secrets
      .getOrCreate(SIGNING_SECRET, () => randomBytes(32).toString("base64url"))
      .then((secret) => new ImageLinks(Buffer.from(secret, "base64url")));
    // A failed read (database briefly away) is tried again on the next request.
    this.links.catch(() => {
      this.links = undefined;
    });
    return this.links;
  }
}
