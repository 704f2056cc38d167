/** How a job ended badly, as its `error` says it to the client. */
export interface JobFailure {
  code: string;
  message: string;
}

/** The ways a video job fails, each at no charge. */
export const FAILURES = {
  engine: { code: "engine_error", message: "The machine could not make the video. Nothing was charged." },
  unreadable: {
    code: "engine_error",
    message: "The machine's clip could not be read as an MP4. Nothing was charged.",
  },
  gone: {
    code: "no_engine_available",
    message: "No machine makes this model for this key any more. Nothing was charged.",
  },
  queueTimeout: {
    code: "queue_timeout",
    message: "No machine was free to make the video in time. Nothing was charged; try again later.",
  },
  runTimeout: {
    code: "timeout",
    message: "The machine took too long to make the video; it was stopped. Nothing was charged.",
  },
  lost: {
    code: "engine_error",
    message: "The machine lost the video while making it. Nothing was charged.",
  },
  silent: {
    code: "engine_error",
    message: "The machine stopped answering while making the video; it was stopped. Nothing was charged.",
  },
} satisfies Record<string, JobFailure>;
