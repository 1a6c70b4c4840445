// The session replay frame's script (a classic script after rrweb's, which sets window.rrweb): plays the
// events the report page posts, with rrweb's Replayer, and answers where the player is. The frame is
// framed by the dashboard only (frame-ancestors 'self'), and takes orders from its parent only.
;(function () {
  'use strict'
  var root = document.getElementById('player')
  var replayer = null
  var total = 0
  var size = { width: 1024, height: 768 }
  var timer = 0

  function post(message) {
    message.fixloop = 'replay'
    parent.postMessage(message, location.origin)
  }
  function fail(error) {
    post({ op: 'error', message: String((error && error.message) || error) })
  }
  function now() {
    return replayer ? Math.max(0, Math.min(total, replayer.getCurrentTime())) : 0
  }
  function playing() {
    return !!replayer && replayer.service.state.matches('playing')
  }
  function tell() {
    post({ op: 'time', t: now(), playing: playing() })
  }
  // While playing, the parent hears the time four times a second; once paused, once.
  function follow() {
    clearInterval(timer)
    timer = setInterval(function () {
      tell()
      if (!playing()) clearInterval(timer)
    }, 250)
    tell()
  }
  /** The recorded viewport, scaled down (never up) to the frame. */
  function fit() {
    var scale = Math.min(1, innerWidth / size.width, innerHeight / size.height)
    root.style.transform = 'scale(' + scale + ')'
  }

  /**
   * Takes the URL off every recorded <link> (href, imagesrcset), in the snapshot, in added nodes and in
   * later attribute changes, before rrweb sees the events. The recorded frame's policy refuses
   * stylesheets, images and fonts, but Chromium checks no policy for <link rel=prefetch>: a recording
   * could make the operator's browser GET any URL of this server with their cookies (found by the web
   * attack of attack-web; /admin/oidc/start replaced a sign-in or confirmation under way). rrweb plays a
   * recorded stylesheet from its captured text (_cssText), which stays; no <link> needs its URL here.
   */
  function inertLinks(events) {
    var links = Object.create(null)
    function strip(attributes) {
      if (!attributes || typeof attributes !== 'object') return
      for (var name in attributes) if (/^(href|imagesrcset)$/i.test(name)) delete attributes[name]
    }
    function walk(node) {
      var stack = [node]
      while (stack.length) {
        var n = stack.pop()
        if (!n || typeof n !== 'object') continue
        if (n.type === 2 && typeof n.tagName === 'string' && n.tagName.toLowerCase() === 'link') {
          links[n.id] = true
          strip(n.attributes)
        }
        if (Array.isArray(n.childNodes)) for (var i = 0; i < n.childNodes.length; i++) stack.push(n.childNodes[i])
      }
    }
    for (var i = 0; i < events.length; i++) {
      var e = events[i]
      var d = e && e.data
      if (!d || typeof d !== 'object') continue
      if (e.type === 2) walk(d.node)
      else if (e.type === 3 && d.source === 0) {
        if (Array.isArray(d.adds)) for (var a = 0; a < d.adds.length; a++) walk(d.adds[a] && d.adds[a].node)
        if (Array.isArray(d.attributes)) for (var b = 0; b < d.attributes.length; b++) if (d.attributes[b] && links[d.attributes[b].id]) strip(d.attributes[b].attributes)
      }
    }
    return events
  }

  function load(events) {
    if (replayer) throw new Error('a replay is loaded already')
    if (!Array.isArray(events)) throw new Error('no events to play')
    inertLinks(events)
    var Replayer = window.rrweb && window.rrweb.Replayer
    if (!Replayer) throw new Error('the replayer did not load')
    replayer = new Replayer(events, {
      root: root,
      showWarning: false,
      showDebug: false,
      mouseTail: false,
      skipInactive: false,
      triggerFocus: false,
      // Never: it would add allow-scripts to the recording's iframe (rrweb's only way to get one).
      UNSAFE_replayCanvas: false,
    })
    // The recorded page must not run: rrweb sandboxes its iframe with exactly "allow-same-origin"; a
    // replayer that did otherwise is not used.
    var sandbox = replayer.iframe && replayer.iframe.getAttribute('sandbox')
    if (sandbox !== 'allow-same-origin') {
      replayer.destroy()
      replayer = null
      throw new Error('the replay frame is not sandboxed as expected')
    }
    replayer.iframe.setAttribute('title', 'Recorded page')
    replayer.iframe.setAttribute('tabindex', '-1')
    replayer.on('finish', tell)
    total = replayer.getMetaData().totalTime
    var w = Number(replayer.iframe.getAttribute('width'))
    var h = Number(replayer.iframe.getAttribute('height'))
    if (w > 0 && h > 0) size = { width: w, height: h }
    replayer.on('resize', function (d) {
      if (d && d.width > 0 && d.height > 0) size = { width: d.width, height: d.height }
      fit()
      post({ op: 'size', width: size.width, height: size.height })
    })
    replayer.pause(0)
    fit()
    post({ op: 'loaded', total: total, width: size.width, height: size.height })
    tell()
  }

  var ops = {
    load: function (m) {
      load(m.events)
    },
    play: function () {
      var t = now()
      replayer.play(t >= total ? 0 : t)
      follow()
    },
    pause: function () {
      replayer.pause()
      tell()
    },
    seek: function (m) {
      var t = Math.max(0, Math.min(total, Number(m.t) || 0))
      if (playing()) {
        replayer.play(t)
        follow()
      } else {
        replayer.pause(t)
        tell()
      }
    },
    speed: function (m) {
      var speed = Number(m.speed)
      if (speed > 0 && speed <= 16) replayer.setConfig({ speed: speed })
    },
  }

  addEventListener('message', function (e) {
    if (e.source !== parent || e.origin !== location.origin) return
    var m = e.data
    if (!m || m.fixloop !== 'replay' || !Object.prototype.hasOwnProperty.call(ops, m.op)) return
    if (m.op !== 'load' && !replayer) return
    try {
      ops[m.op](m)
    } catch (error) {
      fail(error)
    }
  })
  addEventListener('resize', fit)
  // rrweb applies some events from timers: a recording that breaks it there is said, not swallowed.
  addEventListener('error', function (e) {
    fail(e.error || e.message)
  })
  post({ op: 'ready' })
})()
