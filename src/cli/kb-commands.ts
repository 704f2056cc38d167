import { type Command, type CommandGroup, positional } from "./command.ts";

const list: Command = {
  name: "list",
  positionals: [],
  usage: "",
  summary: "every knowledge base: slug, name, owner account, documents, whether it is shared",
  details: [],
  options: {},
  async run(input) {
    return (await input.operator()).listKnowledgeBases();
  },
};

function sharing(name: "share" | "unshare", summary: string, shared: boolean): Command {
  return {
    name,
    positionals: ["SLUG"],
    usage: "",
    summary,
    details: ["SLUG   the knowledge base's slug (zona kb list shows them)"],
    options: {},
    async run(input) {
      return (await input.operator()).setKnowledgeBaseShared(positional(input, 0), shared);
    },
  };
}

/** `zona kb ...` */
export const knowledgeBasesGroup: CommandGroup = {
  name: "kb",
  summary: "list knowledge bases; share one with every key of the installation",
  commands: [
    list,
    sharing("share", "let every key list and ask the base (GET /v1/knowledge-bases)", true),
    sharing("unshare", "keep the base to its own account again", false),
  ],
};
