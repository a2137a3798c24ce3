#version 450

// The GPU load knob. gpu_iters comes from a push constant, so the compiler can neither unroll
// nor fold the loop, and every iteration feeds the colour, so it cannot drop it either.
//
// Only the top-left 4x4 pixels of every 16x16 tile (1/16 of the image) run the loop. On
// lavapipe a loop iteration costs about the same whatever its body, and running it on every
// pixel made 1000 iterations take 44 ms at 256x256 (Mesa 22.3 lavapipe, 2 cores): far too
// coarse a knob. The cost still grows with the window's area and linearly with gpu_iters,
// up to 65535: llvmpipe ends a shader's loops after that many iterations in total.

layout(push_constant) uniform Push {
    uint gpu_iters;
    uint frame;
} push;

layout(location = 0) in vec2 in_uv;
layout(location = 0) out vec4 out_color;

void main()
{
    uvec2 pixel = uvec2(gl_FragCoord.xy);
    float sum = 0.0;
    if (((pixel.x | pixel.y) & 12u) == 0u) {
        vec2 p = in_uv;
        for (uint i = 0u; i < push.gpu_iters; i++) {
            // fract() keeps p in [0,1) however long it runs: no inf, no NaN.
            p = fract(vec2(p.y * 1.618034 + p.x * 0.5, p.x * 2.718282 - p.y * 0.25) + 0.1234);
            sum += p.x * p.y;
        }
    }
    float phase = float(push.frame % 240u) / 240.0;
    out_color = vec4(in_uv.x, in_uv.y, fract(phase + fract(sum) * 0.25), 1.0);
}
