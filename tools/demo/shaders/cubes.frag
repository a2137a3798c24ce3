#version 450

// The colour of the bound descriptor set, so that a draw shows which set it was given.

layout(set = 0, binding = 0) uniform Cube {
    vec4 color;
} cube;

layout(location = 0) out vec4 out_color;

void main()
{
    out_color = cube.color;
}
