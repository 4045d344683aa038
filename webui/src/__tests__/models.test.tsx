/** The model registry pages (list and model) rendered in the app against a fake master
 * (fake-master.tsx). */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { cleanup, fireEvent, screen, waitFor, within } from "@testing-library/react";
import { setToken, type ModelVersion, type RegistryModel } from "../api";
import { calls, callsTo, installFakeMaster, liveChannel, open, removeFakeMaster, routes, USER } from "./fake-master";
import { otherMetricNames, shellWord } from "../pages/ModelPage";

const model = (over: Partial<RegistryModel>): RegistryModel => ({
  name: "mnist", description: "digits", metadata: {}, creation_time: "2026-11-01T10:00:00+00:00",
  last_updated_time: "2026-11-02T10:00:00+00:00", num_versions: 0, ...over,
});

const version = (n: number, validation: Record<string, unknown> | null, metric: Partial<ModelVersion["searcher_metric"]> = {}): ModelVersion => ({
  version: n,
  creation_time: "2026-11-02T10:00:00+00:00",
  checkpoint: {
    uuid: `uuid-${n}`, trial_id: 7, experiment_id: 3, total_batches: 40 * n, state: "COMPLETED",
    resources: {}, metadata: {}, validation, end_time: "2026-11-02T09:00:00+00:00",
  },
  searcher_metric: { name: "validation_loss", smaller_is_better: true, value: (validation?.validation_loss as number) ?? null, ...metric },
});

beforeEach(installFakeMaster);
afterEach(removeFakeMaster);

describe("models list", () => {
  it("lists every model newest first, with versions, last update and metadata, from the navigation", async () => {
    routes["GET /api/v1/models"] = () => [200, { models: [
      model({ name: "newer", description: "second try", num_versions: 2, metadata: { stage: "prod" } }),
      model({ name: "older", description: "", num_versions: 0 }),
    ] }];
    open("/experiments");
    routes["GET /api/v1/ui/experiments"] = () => [200, { experiments: [], total: 0, owners: [], labels: [] }];
    fireEvent.click(await screen.findByRole("link", { name: "Models" }));
    const table = await screen.findByTestId("model-table");
    const rows = within(table).getAllByRole("row").slice(1);
    expect(rows.map((r) => r.querySelector("td")!.textContent)).toEqual(["newer", "older"]);
    expect(rows[0].textContent).toContain("second try");
    expect(rows[0].textContent).toContain('{"stage":"prod"}');
    expect(rows[1].textContent).toContain("(none)");
    expect(within(rows[0]).getByRole("link", { name: "newer" }).getAttribute("href")).toBe("/models/newer");
    const request = calls.find((c) => c.url.pathname === "/api/v1/models")!.url.searchParams;
    expect([request.get("sort_by"), request.get("order_by")]).toEqual(["creation_time", "desc"]);
    expect(within(table).getByText(/^Created/).getAttribute("aria-sort")).toBe("descending");
    expect(screen.queryByTestId("signed-out-hint")).toBeNull();
  });

  it("searches by name and sorts on the master", async () => {
    routes["GET /api/v1/models"] = (url) => [200, { models: [model({ name: `match-${url.searchParams.get("name")}` })] }];
    open("/models");
    await screen.findByTestId("model-table");
    const search = screen.getByLabelText("search models");
    fireEvent.change(search, { target: { value: "mni" } });
    fireEvent.keyDown(search, { key: "Enter" });
    await screen.findByText("match-mni");
    fireEvent.click(screen.getByText(/^Name/));
    const last = () => callsTo("/api/v1/models").at(-1)!.url.searchParams;
    await waitFor(() => expect(last().get("sort_by")).toBe("name"));
    expect(last().get("order_by")).toBe("asc");
    expect(last().get("name")).toBe("mni");
  });

  it("says how to register a model when the registry is empty, and when a search finds none", async () => {
    routes["GET /api/v1/models"] = () => [200, { models: [] }];
    open("/models");
    const empty = await screen.findByTestId("empty-registry");
    expect(empty.textContent).toContain("det model create NAME");
    expect(empty.textContent).toContain("det model register-version NAME CHECKPOINT_UUID");
    expect(empty.textContent).toContain('create_model("NAME")');
    cleanup();
    open("/models?name=zzz");
    expect((await screen.findByTestId("no-match")).textContent).toContain("zzz");
    expect(screen.queryByTestId("empty-registry")).toBeNull();
  });

  it("follows the live channel: reloads (with its search) when it connects and when a model changes", async () => {
    const live = liveChannel();
    let models = [model({ name: "mnist" })];
    routes["GET /api/v1/models"] = () => [200, { models }];
    open("/models?name=mn");
    await waitFor(() => expect(live.queries).toHaveLength(1));
    expect(live.queries[0].get("models")).toBe("true");
    const loads = () => callsTo("/api/v1/models").length;
    expect(loads()).toBe(0); // the list loads once the channel connects: nothing is missed
    // Registered while the channel was connecting: the load on connecting shows it.
    models = [model({ name: "mnist-v2" }), ...models];
    live.connect();
    await screen.findByText("mnist-v2");
    expect(loads()).toBe(1);
    // A version registered elsewhere: the event reloads the list.
    models = [model({ name: "mnist-v2", num_versions: 1 }), model({ name: "mnist" })];
    live.send("models", { changed: [models[0]], removed: [] });
    const versionsOf = (row: number) => within(screen.getAllByRole("row")[row]).getAllByRole("cell")[2].textContent;
    await waitFor(() => expect(versionsOf(1)).toBe("1"));
    expect(callsTo("/api/v1/models").at(-1)!.url.searchParams.get("name")).toBe("mn");
    models = [models[0]];
    live.send("models", { changed: [], removed: ["mnist"] });
    await waitFor(() => expect(screen.getAllByRole("row")).toHaveLength(2));
    expect(loads()).toBe(3);
  });

  it("shows the API's error, not an empty registry, when the list fails", async () => {
    routes["GET /api/v1/models"] = () => [400, { error: "Expected sort_by to be one of name" }];
    open("/models");
    expect((await screen.findByRole("alert")).textContent).toContain("Expected sort_by");
    expect(screen.queryByTestId("empty-registry")).toBeNull();
  });

  it("sends a signed-out visitor to sign in, and back to the models after", async () => {
    setToken(null);
    let signedIn = false;
    routes["GET /api/v1/me"] = () => (signedIn ? [200, USER] : [401, { error: "sign in" }]);
    routes["POST /api/v1/auth/login"] = () => { signedIn = true; return [200, { token: "t2", user: USER }]; };
    routes["GET /api/v1/models"] = () => [200, { models: [model({})] }];
    open("/models/mnist");
    fireEvent.change(await screen.findByRole("textbox"), { target: { value: "determined" } });
    routes["GET /api/v1/models/mnist/versions"] = () => [200, { model: model({}), versions: [] }];
    fireEvent.click(screen.getByRole("button", { name: "Sign in" }));
    expect((await screen.findByTestId("model-description")).textContent).toBe("digits");
  });

  it("tells an anonymous visitor what signing in adds", async () => {
    setToken(null);
    routes["GET /api/v1/models"] = () => [200, { models: [model({})] }];
    open("/models");
    const hint = await screen.findByTestId("signed-out-hint");
    expect(hint.textContent).toContain("browsing as determined");
    expect(within(hint).getByRole("link", { name: "Sign in" }).getAttribute("href")).toBe("/login?next=%2Fmodels");
  });
});

describe("model page", () => {
  it("shows the description, metadata and versions linked to the trials that wrote them", async () => {
    routes["GET /api/v1/models/my%20model/versions"] = () => [200, {
      model: model({ name: "my model", num_versions: 2, metadata: { stage: "prod", owner: { team: "vision" } } }),
      versions: [
        version(2, { validation_loss: 0.123456, accuracy: 0.9 }),
        version(1, { validation_loss: 0.5, accuracy: 0.75, top5: 1 }),
      ],
    }];
    open("/models/my%20model");
    const table = await screen.findByTestId("version-table");
    expect(screen.getByTestId("model-description").textContent).toBe("digits");
    const metadata = screen.getByTestId("model-metadata").textContent;
    expect(metadata).toContain("stage");
    expect(metadata).toContain('{"team":"vision"}');
    const headers = within(table).getAllByRole("columnheader").map((h) => h.textContent);
    expect(headers).toEqual(["Version ▼", "Registered", "Checkpoint", "Experiment", "Trial", "Batches", "Searcher metric", "accuracy", "top5"]);
    const rows = within(table).getAllByRole("row").slice(1);
    expect(rows.map((r) => r.querySelector("td")!.textContent)).toEqual(["2", "1"]);
    const link = within(rows[0]).getByRole("link", { name: "uuid-2" });
    expect(link.getAttribute("href")).toBe("/experiments/3/trials/7");
    expect(rows[0].textContent).toContain("0.1235 validation_loss");
    expect(rows[1].textContent).toContain("0.75");
  });

  it("says when a checkpoint had no validation", async () => {
    routes["GET /api/v1/models/mnist/versions"] = () => [200, { model: model({ num_versions: 1 }), versions: [version(1, null)] }];
    open("/models/mnist");
    expect((await screen.findByTestId("version-table")).textContent).toContain("validation_loss: no validation");
  });

  it("says how to register a version when there is none", async () => {
    routes["GET /api/v1/models/mnist/versions"] = () => [200, { model: model({}), versions: [] }];
    open("/models/mnist");
    const hint = await screen.findByTestId("no-versions");
    expect(hint.textContent).toContain("det model register-version mnist CHECKPOINT_UUID");
    expect(hint.textContent).toContain('get_model("mnist").register_version(CHECKPOINT_UUID)');
    expect(screen.getByTestId("model-metadata").textContent).toContain("(none)");
  });

  it("shows the master's error for an unknown model", async () => {
    routes["GET /api/v1/models/gone/versions"] = () => [404, { error: "model 'gone' not found" }];
    open("/models/gone");
    expect((await screen.findByRole("alert")).textContent).toBe("model 'gone' not found");
    expect(within(screen.getByRole("heading")).getByRole("link", { name: "Models" }).getAttribute("href")).toBe("/models");
  });

  it("edits the metadata when signed in, refusing what is not a JSON object", async () => {
    let current = model({ metadata: { stage: "dev" } });
    routes["GET /api/v1/models/mnist/versions"] = () => [200, { model: current, versions: [] }];
    routes["PATCH /api/v1/models/mnist"] = (_, body) => { current = { ...current, ...(body as object) }; return [200, current]; };
    open("/models/mnist");
    fireEvent.click(await screen.findByRole("button", { name: "edit metadata" }));
    const box = screen.getByLabelText("metadata");
    fireEvent.change(box, { target: { value: "[1, 2]" } });
    fireEvent.click(screen.getByRole("button", { name: "save" }));
    expect((await screen.findByRole("alert")).textContent).toContain("metadata: expected a JSON object");
    expect(calls.some((c) => c.method === "PATCH")).toBe(false);
    fireEvent.change(box, { target: { value: '{"stage": "prod"}' } });
    fireEvent.click(screen.getByRole("button", { name: "save" }));
    await waitFor(() => expect(screen.getByTestId("model-metadata").textContent).toContain("prod"));
    expect(calls.find((c) => c.method === "PATCH")!.body).toEqual({ metadata: { stage: "prod" } });
  });

  it("follows the live channel: a version registered or an edit made elsewhere shows, and a deletion", async () => {
    const live = liveChannel();
    let current: { model: RegistryModel; versions: ModelVersion[] } = { model: model({}), versions: [] };
    routes["GET /api/v1/models/mnist/versions"] = () => [200, current];
    open("/models/mnist");
    await waitFor(() => expect(live.queries).toHaveLength(1));
    expect(live.queries[0].get("model")).toBe("mnist");
    // Changed while the channel was connecting: the load on connecting shows it.
    current = { model: model({ description: "edited", num_versions: 1 }), versions: [version(1, { validation_loss: 0.5 })] };
    live.connect();
    await screen.findByTestId("version-table");
    expect(callsTo("/api/v1/models/mnist/versions")).toHaveLength(1);
    expect(screen.getByTestId("model-description").textContent).toBe("edited");
    // Events carry the versions: no request needed.
    const loads = callsTo("/api/v1/models/mnist/versions").length;
    live.send("model", { model: model({ description: "edited", num_versions: 2 }),
                         versions: [version(2, { validation_loss: 0.25 }), version(1, { validation_loss: 0.5 })] });
    await waitFor(() => expect(within(screen.getByTestId("version-table")).getAllByRole("row")).toHaveLength(3));
    expect(screen.getByTestId("version-table").textContent).toContain("0.25 validation_loss");
    live.send("model", { model: null, versions: [] });
    expect((await screen.findByTestId("model-removed")).textContent).toContain("deleted");
    expect(callsTo("/api/v1/models/mnist/versions")).toHaveLength(loads);
  });

  it("offers no editing to an anonymous visitor", async () => {
    setToken(null);
    routes["GET /api/v1/models/mnist/versions"] = () => [200, { model: model({}), versions: [] }];
    open("/models/mnist");
    await screen.findByTestId("signed-out-hint");
    expect(screen.queryByRole("button", { name: "edit metadata" })).toBeNull();
    expect(screen.queryByRole("button", { name: "edit" })).toBeNull();
  });
});

describe("otherMetricNames", () => {
  it("leaves out the searcher metric all versions share, keeps it when they differ", () => {
    const a = version(1, { validation_loss: 1, accuracy: 0.5 });
    const b = version(2, { validation_loss: 2, error: 0.1 });
    expect(otherMetricNames([a, b])).toEqual(["accuracy", "error"]);
    const c = version(3, { validation_loss: 1, accuracy: 0.5 }, { name: "accuracy" });
    expect(otherMetricNames([a, c])).toEqual(["accuracy", "validation_loss"]);
  });
});

describe("shellWord", () => {
  it("quotes a model name the shell would split or expand", () => {
    expect(shellWord("mnist-v2.1")).toBe("mnist-v2.1");
    expect(shellWord("my model")).toBe("'my model'");
    expect(shellWord("it's $HOME")).toBe("'it'\\''s $HOME'");
  });
});
