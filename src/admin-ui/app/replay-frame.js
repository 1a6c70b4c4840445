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

  function load(events) {
    if (replayer) throw new Error('a replay is loaded already')
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
