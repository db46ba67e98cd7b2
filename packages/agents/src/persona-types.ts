/**
 * A persona: who an agent is and what it may do. Read from `personas/<name>.md` beside config.yaml or in the notes
 * (docs/agents.md, "Personas"): the body is its identity and instructions, the frontmatter its model profile, tool
 * grants, what it may hand on to its children, and its limits.
 */
export interface Persona {
  /** The file name without `.md`: letters, digits, `_` and `-`. */
  name: string;
  /** Where it was read from, for people: `personas/researcher.md (config)`, `notes/personas/x.md`, or `built in`. */
  source: string;
  /** The absolute path of its file; absent for the built-in default. */
  file?: string;
  /** One line for listings (`description:`). */
  description?: string;
  /** The note's body: identity and instructions, the start of the agent's system prompt. */
  instructions: string;
  /** The LLM profile its loops use (`model:`); absent: the loop's default. */
  profile?: string;
  /** `tools:`: glob patterns over tool names, as config.yaml's `tools:` (deny > approve > allow). */
  tools: ToolGrants;
  /** `delegable:`: patterns of its own grants a child it spawns may receive. @default [] (nothing) */
  delegable: string[];
  /** `mcp_servers:`: names under config.yaml's `mcp_servers:` whose tools its loops get. @default [] */
  mcpServers: string[];
  /** `max_depth:`: how deep the tree under a root of this persona may go (the root is depth 0). @default 3 */
  maxDepth: number;
  /** `max_children:`: its children alive at once. @default 5 */
  maxChildren: number;
  /**
   * `code_mode:`: whether its loops get `run_code` and `search_tools` (docs/codeact.md), when its tools grant
   * `run_code`: `alongside` the JSON tools, with every tool's declaration in run_code's description; `discovery`,
   * only the code tools (and the tools code cannot call), the model finding the others with search_tools.
   * @default 'off'
   */
  codeMode?: 'off' | 'alongside' | 'discovery';
  /** `budget:`: the most a loop of this persona may spend; a spawn may ask for less, never more. */
  budget: PersonaBudget;
}

export interface PersonaBudget {
  /** Model calls. @default 20 */
  maxSteps: number;
  /** Tokens reported by the model. @default none */
  tokens?: number;
  /** Wall time in milliseconds, paused time included. @default none */
  timeoutMs?: number;
}

/** Tool-name patterns (`*` is any run of characters), as config.yaml's `tools:`. */
export interface ToolGrants {
  /** What it may call. A tool no pattern names is not granted. */
  allow: string[];
  /** Never: beats allow. */
  deny: string[];
  /** Granted, but every call waits for the owner's approval. */
  approve: string[];
}

/** A persona file that could not be read: where, and why, for `config check` and the listing. */
export interface PersonaProblem {
  /** The file, relative to the config directory or the notes root as the owner sees it. */
  file: string;
  line?: number;
  /** The column, counting from 1, when the line is known. */
  col?: number;
  /** The key path as people read it: `tools.allow[1]`, `budget.timeout`, `(document)`, `(body)`. */
  key?: string;
  /** The key path as data (`['tools', 'allow', 1]`); empty for the file as a whole. */
  path?: readonly (string | number)[];
  message: string;
  /** What would be valid, when there is something to say: did you mean `search_notes`?. */
  hint?: string;
  /** The persona it is about (the file's name without `.md`), when known: that persona cannot be used. */
  persona?: string;
}

/** One layer of a grant chain: a tool passes it when an `allow` pattern matches and no `deny` pattern does. */
export interface GrantLayer {
  /** Who set this layer, for the refusal's words: `persona researcher` or `delegable of persona manager`. */
  by: string;
  allow: string[];
  deny: string[];
}

/**
 * What a loop may call, fixed when it starts (or is spawned) and never widened afterwards: every layer must let a tool
 * through. A root loop has its persona's grants as its one layer; a child has its parent's layers, then its parent's
 * `delegable`, then its own persona's grants: `child.grants ∩ parent.delegable ∩ parent's own chain`.
 */
export interface GrantChain {
  layers: GrantLayer[];
  /** Patterns whose calls wait for the owner, from every persona on the way down (a union: asking is never lost). */
  approve: string[];
}
