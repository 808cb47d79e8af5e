package packets

import (
	"fmt"

	"github.com/sandertv/gophertunnel/minecraft/protocol"
)

// CraftReservedStackRequestAction is the stack request action protocol 2225
// added, craft_reserved (minecraft-data 1.26.60's ItemStackRequest): a
// reserved recipe by name, crafted a number of times. gophertunnel v1.62.0
// does not know it, so a Codec at 2225 reads it into this type and writes
// it from it; at 2193, which has no such action, it cannot be written.
type CraftReservedStackRequestAction struct {
	// ReservedID names the reserved recipe.
	ReservedID string
	// TimesCrafted is how many times the recipe was crafted.
	TimesCrafted byte
}

// Marshal encodes or decodes the action's fields.
func (a *CraftReservedStackRequestAction) Marshal(r protocol.IO) {
	r.String(&a.ReservedID)
	r.Uint8(&a.TimesCrafted)
}

// Stack request action variants as 2225 numbers them: craft_reserved is
// inserted at 16, before the two last of 2193's.
const (
	variantCraftReserved2225  = 16
	variantNonImplemented2225 = 17
	variantResultsDeprecated  = 18
)

// stackIO2225 is an IO that marshals stack request actions as 2225 numbers
// them; everything else goes to the IO it wraps.
type stackIO2225 struct{ protocol.IO }

// stackActions2225 wraps io so that the stack request actions marshalled
// through it are numbered as 2225 numbers them.
func stackActions2225(io protocol.IO) protocol.IO {
	return asReader(io, stackIO2225{io})
}

// StackRequestAction marshals a stack request action: a varuint32 variant,
// a u8 legacy ID (gophertunnel's ID of the action, which readers ignore),
// then its fields.
func (s stackIO2225) StackRequestAction(x *protocol.StackRequestAction) {
	if !reading(s.IO) {
		var variant uint32
		var legacy uint8
		switch (*x).(type) {
		case *CraftReservedStackRequestAction:
			variant, legacy = variantCraftReserved2225, variantCraftReserved2225+2
		case *protocol.CraftNonImplementedStackRequestAction:
			variant, legacy = variantNonImplemented2225, protocol.StackRequestActionCraftNonImplementedDeprecated
		case *protocol.CraftResultsDeprecatedStackRequestAction:
			variant, legacy = variantResultsDeprecated, protocol.StackRequestActionCraftResultsDeprecated
		default:
			// Numbered as at 2193.
			s.IO.StackRequestAction(x)
			return
		}
		s.Varuint32(&variant)
		s.Uint8(&legacy)
		(*x).Marshal(s)
		return
	}
	var variant uint32
	var legacy uint8
	s.Varuint32(&variant)
	s.Uint8(&legacy)
	a := stackRequestAction2225(variant)
	if a == nil {
		panic(fmt.Errorf("stack request action variant %d: %w", variant, ErrMalformed))
	}
	*x = a
	a.Marshal(asReader(s.IO, s))
}

// stackRequestAction2225 returns a new action of a 2225 variant, nil for a
// variant there is none of.
func stackRequestAction2225(variant uint32) protocol.StackRequestAction {
	switch variant {
	case 0:
		return &protocol.TakeStackRequestAction{}
	case 1:
		return &protocol.PlaceStackRequestAction{}
	case 2:
		return &protocol.SwapStackRequestAction{}
	case 3:
		return &protocol.DropStackRequestAction{}
	case 4:
		return &protocol.DestroyStackRequestAction{}
	case 5:
		return &protocol.ConsumeStackRequestAction{}
	case 6:
		return &protocol.CreateStackRequestAction{}
	case 7:
		return &protocol.LabTableCombineStackRequestAction{}
	case 8:
		return &protocol.BeaconPaymentStackRequestAction{}
	case 9:
		return &protocol.MineBlockStackRequestAction{}
	case 10:
		return &protocol.CraftRecipeStackRequestAction{}
	case 11:
		return &protocol.AutoCraftRecipeStackRequestAction{}
	case 12:
		return &protocol.CraftCreativeStackRequestAction{}
	case 13:
		return &protocol.CraftRecipeOptionalStackRequestAction{}
	case 14:
		return &protocol.CraftGrindstoneRecipeStackRequestAction{}
	case 15:
		return &protocol.CraftLoomRecipeStackRequestAction{}
	case variantCraftReserved2225:
		return &CraftReservedStackRequestAction{}
	case variantNonImplemented2225:
		return &protocol.CraftNonImplementedStackRequestAction{}
	case variantResultsDeprecated:
		return &protocol.CraftResultsDeprecatedStackRequestAction{}
	}
	return nil
}
