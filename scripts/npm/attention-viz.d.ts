// Types of the attnviz package: importing it defines the <attention-viz> custom element.

/** Where the widget's files, models and Hub models come from. Call before the first widget
 *  starts (in the script that imports the package, or before adding widgets to the page). */
export interface ConfigureOptions {
  /** The folder that holds pkg/, worker/ and models/ when they are served somewhere else
   *  (another path or origin, with CORS). Default: found from the package's own files. */
  base?: string;
  /** The folder of the default models (its index.json and one folder per model, as `make site`
   *  writes them). Default: models/ beside the package's files. */
  models?: string;
  /** The Hub that `hf:` model ids are fetched from ({hub}/{repo}/resolve/{revision}/{file}).
   *  Default: https://huggingface.co. */
  hub?: string;
  /** Which wasm build to load where the browser can run it (default: the best one). */
  build?: 'simd' | 'relaxed' | 'threads';
  /** A second visit works offline (registers sw.js; the page must be inside sw.js's folder). */
  offline?: boolean;
  /** A host that serves no files (the notebook): the model worker's script URL (e.g. a blob:
   *  URL of the bundled worker; module workers from blob: URLs need an http(s) page)… */
  worker?: string;
  /** …and the files under `base` the worker reads instead of fetching, by path
   *  ('pkg/attnviz_bg.wasm', 'models/index.json', …). */
  files?: Record<string, Blob>;
}

export function configure(options: ConfigureOptions): void;

/** What inspecting a model's headers found (src/models/inspect.rs). */
export interface ModelReport {
  architecture: string;
  format: string;
  layers: number;
  decoder_layers?: number;
  heads: number;
  kv_heads: number;
  hidden_size: number;
  parameters: number;
  file_bytes: number;
  memory_bytes: number;
  memory_budget: number;
  [key: string]: unknown;
}

/** The widget's view state, as `attention-change` and `attention-ready` report it. */
export interface AttentionState {
  model: string;
  text: string;
  view: string;
  kind: string;
  layer: number;
  head: number;
  tokens: string[];
  targetTokens: string[];
  outputText: string | null;
  drawCount: number;
  [key: string]: unknown;
}

/** One layer's attention for every head: [heads][queries][keys] (a batch of one, [1][…], is
 *  taken too), or its shape and its numbers row-major. */
export type LayerAttention = number[][][] | number[][][][] | { shape: number[]; data: Float32Array | number[] };

/** Attention computed elsewhere (BertViz's argument names): one stack, or an encoder-decoder. */
export type SuppliedAttention = {
  label?: string;
  specials?: string[];
} & (
  | { tokens: string[]; attention: LayerAttention[]; causal?: boolean }
  | {
      encoder_tokens: string[];
      decoder_tokens?: string[];
      encoder_attention?: LayerAttention[];
      decoder_attention?: LayerAttention[];
      cross_attention?: LayerAttention[];
    }
);

/**
 * <attention-viz model="minilm" text="…" view="head" layer="4" head="2" editable>: a live
 * attention map. model: a default model's id (minilm, en-pt, smollm2), a kept model's id, or a
 * Hugging Face Hub id, hf:owner/name[@revision][?file=name.gguf]. src="attention.json" instead:
 * attention computed elsewhere (a SuppliedAttention), drawn without a model.
 */
export class AttentionViz extends HTMLElement {
  /** Draw attention computed elsewhere, without a model; throws an Error naming what does not fit. */
  showAttention(data: SuppliedAttention): void;
  /** Open the reader's own model (a folder's Files, or one .gguf): read and kept in the browser. */
  openModel(files: FileList | File[], options?: { name?: string }): Promise<ModelReport>;
  /** Forget a model opened with openModel. */
  removeModel(id: string): Promise<void>;
  /** The current view state. */
  readonly viewState: Record<string, unknown>;
}

declare global {
  interface HTMLElementTagNameMap {
    'attention-viz': AttentionViz;
  }
  interface HTMLElementEventMap {
    'attention-ready': CustomEvent<AttentionState>;
    'attention-change': CustomEvent<AttentionState>;
    'attention-error': CustomEvent<{ message: string }>;
  }
}
