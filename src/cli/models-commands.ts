import { type Command, type CommandGroup, positional } from "./command.ts";

const list: Command = {
  name: "list",
  positionals: [],
  usage: "",
  summary: "the catalogue: each model, its machines and whether it takes requests now",
  details: [],
  options: {},
  async run(input) {
    return (await input.operator()).listModels();
  },
};

function activation(name: "activate" | "deactivate", summary: string, active: boolean): Command {
  return {
    name,
    positionals: ["MODEL"],
    usage: "",
    summary,
    details: ["MODEL   a model id of the catalogue served on request (on_request: true)"],
    options: {},
    async run(input) {
      return (await input.operator()).setModelActive(positional(input, 0), active);
    },
  };
}

/** `zona models ...` */
export const modelsGroup: CommandGroup = {
  name: "models",
  summary: "list the catalogue; activate models served on request",
  commands: [
    list,
    activation("activate", "let requests reach a model served on request (it is loaded)", true),
    activation("deactivate", "answer 503 model_activation_required for it again", false),
  ],
};
