// What a Fish web app does with livekit-client, step by step, against `fishtalk sim serve`.
// drive.mjs calls window.conformance.run(config) and hands the result to pytest, which
// asserts on it. Every wait is bounded; a failed step records its error and stops the run.
"use strict";

(function () {
  const LK = window.LivekitClient;
  const enc = new TextEncoder();
  const dec = new TextDecoder();
  const now = () => performance.now();

  function until(what, predicate, timeoutMs) {
    return new Promise((resolve, reject) => {
      const started = now();
      const tick = () => {
        let value;
        try {
          value = predicate();
        } catch (err) {
          reject(err);
          return;
        }
        if (value) {
          resolve(value);
        } else if (now() - started > timeoutMs) {
          reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`));
        } else {
          setTimeout(tick, 10);
        }
      };
      tick();
    });
  }

  class Call {
    constructor(cfg, result) {
      this.cfg = cfg;
      this.result = result;
      this.states = [];
      this.agentEvents = [];
      this.segments = new Map(); // segment id -> {identity, text, final, firstAt, closedAt}
      this.disconnects = [];
      this.reconnecting = 0;
      this.reconnected = 0;
      this.signalReconnecting = 0;
      this.level = 0;
      this.firstSoundAt = null;
      this.soundSince = null;
      this.tools = {};
      this.speakers = [];
      this.qualities = [];
    }

    async createSession(headers) {
      const started = now();
      const resp = await fetch(this.cfg.apiUrl + "/v1/agent/sessions", {
        method: "POST",
        headers: Object.assign({ "Content-Type": "application/json" }, headers || {}),
        body: JSON.stringify({ agent_id: this.cfg.agentId }),
      });
      const body = await resp.json();
      return { status: resp.status, ms: now() - started, grant: body };
    }

    wire(room) {
      const E = LK.RoomEvent;
      room.on(E.ParticipantAttributesChanged, (changed, participant) => {
        if ("lk.agent.state" in changed) {
          this.states.push(changed["lk.agent.state"]);
        }
      });
      room.on(E.ParticipantConnected, (participant) => {
        const state = participant.attributes["lk.agent.state"];
        if (state !== undefined) this.states.push(state);
      });
      room.on(E.DataReceived, (payload, participant, kind, topic) => {
        if (topic !== "agent-event") return;
        const event = JSON.parse(dec.decode(payload));
        event.receivedAt = now();
        this.agentEvents.push(event);
        if (event.type === "client_tool.call") this.onToolCall(event);
      });
      room.on(E.TrackSubscribed, (track) => {
        if (track.kind === LK.Track.Kind.Audio) this.listen(track);
      });
      room.on(E.ActiveSpeakersChanged, (speakers) => {
        this.speakers.push(speakers.map((p) => p.identity));
      });
      room.on(E.ConnectionQualityChanged, (quality, participant) => {
        this.qualities.push([participant.identity, quality]);
      });
      room.on(E.Reconnecting, () => this.reconnecting++);
      room.on(E.SignalReconnecting, () => this.signalReconnecting++);
      room.on(E.Reconnected, () => this.reconnected++);
      room.on(E.Disconnected, (reason) => this.disconnects.push(reason));
      room.registerTextStreamHandler("lk.transcription", async (reader, from) => {
        const id = reader.info.attributes["lk.segment_id"] || reader.info.id;
        const seg = {
          identity: from.identity,
          text: "",
          final: false,
          firstAt: now(),
          closedAt: null,
        };
        this.segments.set(id + ":" + reader.info.id, seg);
        for await (const chunk of reader) seg.text += chunk;
        seg.final = reader.info.attributes["lk.transcription_final"] === "true";
        seg.closedAt = now();
      });
    }

    listen(track) {
      // WebAudio on the received track: Chrome only feeds a remote WebRTC track to
      // WebAudio while a media element plays it, so attach one too.
      const element = track.attach();
      element.muted = false;
      document.body.appendChild(element);
      const ctx = new AudioContext();
      ctx.resume();
      const source = ctx.createMediaStreamSource(new MediaStream([track.mediaStreamTrack]));
      const analyser = ctx.createAnalyser();
      analyser.fftSize = 1024;
      source.connect(analyser);
      const buf = new Float32Array(analyser.fftSize);
      const measure = () => {
        analyser.getFloatTimeDomainData(buf);
        let sum = 0;
        for (const v of buf) sum += v * v;
        const rms = Math.sqrt(sum / buf.length);
        this.level = Math.max(this.level, rms);
        if (rms > 0.001) this.lastSoundAt = now();
        if (rms > 0.001 && this.firstSoundAt === null) this.firstSoundAt = now();
        if (rms > 0.001 && this.soundSince !== null && this.soundAfter === undefined) {
          this.soundAfter = now();
        }
      };
      setInterval(measure, 10);
    }

    async send(event) {
      await this.room.localParticipant.publishData(enc.encode(JSON.stringify(event)), {
        reliable: true,
        topic: "client-event",
      });
    }

    async onToolCall(event) {
      const handler = { get_color: () => ({ color: "teal" }) }[event.toolName];
      this.tools[event.callId] = event.toolName;
      if (!event.expectsResponse) return;
      const result = handler
        ? { type: "client_tool.result", callId: event.callId, result: handler() }
        : {
            type: "client_tool.result",
            callId: event.callId,
            result: `no such tool: ${event.toolName}`,
            isError: true,
          };
      await this.send(result);
    }

    agentSegment(containing) {
      for (const seg of this.segments.values()) {
        if (seg.identity !== "agent") continue;
        if (seg.text.includes(containing)) return seg;
      }
      return null;
    }

    closedAgentSegment(containing) {
      const seg = this.agentSegment(containing);
      return seg && seg.closedAt !== null ? seg : null;
    }
  }

  async function step(result, name, fn) {
    const started = now();
    try {
      const value = await fn();
      result.steps.push(name);
      result[name] = Object.assign({ ms: now() - started }, value || {});
    } catch (err) {
      result.error = `${name}: ${err && err.message ? err.message : err}`;
      throw err;
    }
  }

  async function run(cfg) {
    const result = { steps: [], origin: location.origin, sdkVersion: LK.version };
    const call = new Call(cfg, result);
    try {
      await runSteps(cfg, result, call);
    } catch (err) {
      // recorded in result.error by step(); pytest reports it
    }
    result.states = call.states;
    result.agentEvents = call.agentEvents.map((e) => e.type);
    result.disconnects = call.disconnects;
    result.maxLevel = call.level;
    result.speakers = call.speakers;
    result.qualities = call.qualities;
    result.segments = Array.from(call.segments.values()).map((s) => ({
      identity: s.identity,
      text: s.text,
      final: s.final,
      closed: s.closedAt !== null,
    }));
    return result;
  }

  async function runSteps(cfg, result, call) {
    const W = cfg.timeoutMs;
    let grant;

    await step(result, "session", async () => {
      // A public agent: no API key, the browser sends its Origin.
      const created = await call.createSession({});
      if (created.status !== 201) throw new Error(`session request: HTTP ${created.status}`);
      grant = created.grant;
      return { status: created.status, requestMs: created.ms, livekitUrl: grant.livekit_url };
    });

    const room = new LK.Room(); // default options
    call.room = room;
    call.wire(room);
    let connectStarted;

    await step(result, "connect", async () => {
      connectStarted = now();
      await room.connect(grant.livekit_url, grant.token);
      return {
        connectMs: now() - connectStarted,
        identity: room.localParticipant.identity,
        state: room.state,
      };
    });

    await step(result, "agentState", async () => {
      await until("agent state listening", () => call.states.includes("listening"), W);
      const agent = room.remoteParticipants.get("agent");
      return { agentKind: agent ? agent.kind : null, history: call.states.slice() };
    });

    await step(result, "audio", async () => {
      await until("agent audio (WebAudio RMS > 0)", () => call.firstSoundAt !== null, W);
      return { firstAudioMs: call.firstSoundAt - connectStarted, maxRms: call.level };
    });

    await step(result, "greeting", async () => {
      const seg = await until("greeting transcript", () => call.closedAgentSegment(cfg.greeting), W);
      return { text: seg.text, final: seg.final };
    });

    await step(result, "typedTurn", async () => {
      await until("listening", () => call.states[call.states.length - 1] === "listening", W);
      // The greeting's last audio may still be playing out: start from quiet.
      await until("quiet", () => now() - call.lastSoundAt > 600, W);
      const sent = now();
      call.soundSince = sent;
      call.soundAfter = undefined;
      await call.send({ type: "user.message", text: "hello from the browser" });
      const first = await until("reply transcript", () => call.agentSegment("You said: hello from the browser"), W);
      const replyMs = first.firstAt - sent;
      const seg = await until("reply closed", () => call.closedAgentSegment("You said: hello from the browser"), W);
      await until("reply audio", () => call.soundAfter !== undefined, W);
      return {
        replyMs,
        replyAudioMs: call.soundAfter - sent,
        text: seg.text,
        final: seg.final,
        states: call.states.slice(),
      };
    });

    if (cfg.stopAfterTurn) return; // bench/bench_browser.py: the timed steps only

    await step(result, "interrupt", async () => {
      await until("listening", () => call.states[call.states.length - 1] === "listening", W);
      const words = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty";
      await call.send({ type: "user.message", text: words });
      await until("speaking", () => call.states[call.states.length - 1] === "speaking", W);
      await until("some words", () => call.agentSegment("You said: one"), W);
      await call.send({ type: "user.interrupt" });
      const seg = await until("interrupted segment closed", () => call.closedAgentSegment("You said: one"), W);
      await until("listening again", () => call.states[call.states.length - 1] === "listening", W);
      return { text: seg.text, final: seg.final, complete: seg.text.includes("twenty") };
    });

    await step(result, "clientTool", async () => {
      await call.send({ type: "user.message", text: "call get_color", audio: false });
      const call_ = await until("client_tool.call", () => call.agentEvents.find((e) => e.type === "client_tool.call"), W);
      const seg = await until("tool reply", () => call.closedAgentSegment("teal"), W);
      return { toolName: call_.toolName, expectsResponse: call_.expectsResponse, text: seg.text };
    });

    if (cfg.reconnects) {
      await step(result, "resume", async () => {
        const sid = room.localParticipant.sid;
        const before = call.reconnected;
        await room.simulateScenario("signal-reconnect");
        await until("reconnected after resume", () => call.reconnected > before, W);
        await call.send({ type: "user.message", text: "after resume", audio: false });
        const seg = await until("reply after resume", () => call.closedAgentSegment("You said: after resume"), W);
        return { sameSid: room.localParticipant.sid === sid, text: seg.text };
      });

      await step(result, "fullReconnect", async () => {
        const sid = room.localParticipant.sid;
        const before = call.reconnected;
        await room.simulateScenario("full-reconnect");
        await until("reconnected after full reconnect", () => call.reconnected > before, W);
        await until("agent back in view", () => room.remoteParticipants.has("agent"), W);
        await call.send({ type: "user.message", text: "after rejoin", audio: false });
        const seg = await until("reply after rejoin", () => call.closedAgentSegment("You said: after rejoin"), W);
        return { newSid: room.localParticipant.sid !== sid, text: seg.text };
      });
    }

    await step(result, "tokenReuse", async () => {
      // A second tab with the same token: refused, and the first stays connected.
      const second = new LK.Room();
      let error = null;
      try {
        await second.connect(grant.livekit_url, grant.token);
      } catch (err) {
        error = { name: err.name, message: String(err.message), status: err.status ?? null };
      }
      await second.disconnect();
      return { refused: error !== null, error, firstState: room.state };
    });

    await step(result, "hangup", async () => {
      await call.send({ type: "user.hangup" });
      const ended = await until("session.ended", () => call.agentEvents.find((e) => e.type === "session.ended"), W);
      await room.disconnect();
      return { reason: ended.reason };
    });

    await step(result, "endedTokenRefused", async () => {
      const again = new LK.Room();
      let error = null;
      try {
        await again.connect(grant.livekit_url, grant.token);
      } catch (err) {
        error = { name: err.name, message: String(err.message), status: err.status ?? null };
      }
      await again.disconnect();
      return { refused: error !== null, error };
    });
  }

  window.conformance = { run };
})();
