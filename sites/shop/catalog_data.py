"""Word lists the shop's seed draws from (invented names; nothing here is copied from WebArena's data)."""

# top category -> subcategory -> (product nouns, (min price, max price))
CATALOG: dict[str, dict[str, tuple[list[str], tuple[float, float]]]] = {
    "Electronics": {
        "Headphones": (["Wireless Headphones", "Over-Ear Headphones", "Earbuds", "Noise Cancelling Headset",
                        "Sport Earphones", "Studio Monitor Headphones"], (12, 320)),
        "Cameras": (["Action Camera", "Mirrorless Camera", "Dash Cam", "Instant Camera", "Webcam",
                     "Security Camera"], (25, 900)),
        "Computer Accessories": (["USB-C Hub", "Wireless Mouse", "Mechanical Keyboard", "Laptop Stand",
                                  "External SSD", "Monitor Arm"], (9, 180)),
        "Smart Home": (["Smart Plug", "Video Doorbell", "Smart Bulb", "Thermostat", "Smart Speaker",
                        "Motion Sensor"], (10, 250)),
    },
    "Home & Kitchen": {
        "Cookware": (["Nonstick Frying Pan", "Cast Iron Skillet", "Stock Pot", "Saucepan Set", "Dutch Oven",
                      "Wok"], (15, 260)),
        "Bedding": (["Cotton Sheet Set", "Down Alternative Comforter", "Memory Foam Pillow", "Weighted Blanket",
                     "Mattress Topper", "Duvet Cover"], (18, 210)),
        "Storage & Organization": (["Storage Bins", "Closet Organizer", "Shoe Rack", "Drawer Dividers",
                                    "Under Bed Storage Bag", "Pantry Shelf"], (8, 120)),
        "Small Appliances": (["Electric Kettle", "Coffee Maker", "Air Fryer", "Toaster", "Blender",
                              "Rice Cooker"], (20, 280)),
    },
    "Sports & Outdoors": {
        "Camping": (["Dome Tent", "Sleeping Bag", "Camping Lantern", "Hammock", "Folding Camp Chair",
                     "Portable Stove"], (14, 340)),
        "Fitness": (["Yoga Mat", "Adjustable Dumbbells", "Resistance Bands", "Jump Rope", "Foam Roller",
                     "Kettlebell"], (7, 300)),
        "Cycling": (["Bike Helmet", "Bike Light Set", "Cycling Gloves", "Bike Lock", "Water Bottle Cage",
                     "Saddle Bag"], (8, 150)),
        "Water Sports": (["Swim Goggles", "Snorkel Set", "Dry Bag", "Life Jacket", "Paddle Board Leash",
                          "Beach Towel"], (9, 180)),
    },
    "Beauty & Personal Care": {
        "Skin Care": (["Face Moisturizer", "Vitamin C Serum", "Sunscreen SPF 50", "Facial Cleanser",
                       "Eye Cream", "Sheet Mask Pack"], (6, 95)),
        "Hair Care": (["Argan Oil Shampoo", "Hair Dryer", "Curling Iron", "Leave-In Conditioner",
                       "Detangling Brush", "Hair Mask"], (6, 160)),
        "Makeup": (["Matte Lipstick", "Liquid Foundation", "Mascara", "Eyeshadow Palette", "Makeup Brush Set",
                    "Setting Spray"], (5, 70)),
        "Oral Care": (["Electric Toothbrush", "Water Flosser", "Whitening Strips", "Mouthwash",
                       "Toothbrush Heads", "Tongue Scraper"], (4, 140)),
    },
    "Office Products": {
        "Writing Supplies": (["Gel Pens", "Fountain Pen", "Highlighters", "Mechanical Pencils",
                              "Fine Liners", "Dry Erase Markers"], (4, 85)),
        "Paper & Notebooks": (["Spiral Notebook", "Dotted Journal", "Sticky Notes", "Legal Pads",
                               "Printer Paper", "Index Cards"], (3, 45)),
        "Desk Accessories": (["Desk Organizer", "Desk Lamp", "Desk Pad", "Pen Holder", "File Sorter",
                              "Monitor Riser"], (8, 90)),
        "Office Furniture": (["Ergonomic Office Chair", "Standing Desk", "Filing Cabinet", "Bookshelf",
                              "Footrest", "Rolling Cart"], (35, 650)),
    },
}

BRANDS = ["Aurora", "Northwind", "Bluepeak", "Cobalt & Co", "Everhart", "Fennex", "Greystone", "Halcyon",
          "Ironleaf", "Juniper Lane", "Kestrel", "Lumora", "Mapleton", "Nimbus", "Orchid Bay", "Pinecrest",
          "Quillon", "Riverstone", "Solace", "Tidewater", "Umbra", "Verdant", "Willowick", "Zephyr"]
ADJECTIVES = ["Classic", "Premium", "Compact", "Ultra", "Pro", "Essential", "Deluxe", "Lightweight",
              "Heavy Duty", "Eco", "Travel", "Smart", "Portable", "Everyday", "Elite"]
COLORS = ["Black", "White", "Navy", "Grey", "Red", "Sage Green", "Sand", "Blue", "Rose", "Charcoal"]
FEATURES = ["durable materials", "a one-year warranty", "easy cleaning", "a compact footprint",
            "long battery life", "a soft-touch finish", "tool-free assembly", "recycled packaging",
            "adjustable settings", "a lightweight frame", "quiet operation", "fast setup"]

FIRST_NAMES = ["Olivia", "Liam", "Ava", "Noah", "Sophia", "Mason", "Isabella", "Lucas", "Mia", "Ethan", "Amelia",
               "James", "Harper", "Benjamin", "Evelyn", "Henry", "Abigail", "Daniel", "Ella", "Samuel", "Grace",
               "Jack", "Chloe", "Owen", "Lily", "Ryan", "Zoe", "Nathan", "Nora", "Caleb", "Hannah", "Adam",
               "Leah", "Julian", "Aria", "Isaac", "Maya", "Aaron", "Sarah", "Gabriel", "Priya", "Wei", "Carlos",
               "Fatima", "Kenji", "Amara", "Diego", "Ingrid", "Tomas", "Yara"]
LAST_NAMES = ["Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis", "Rodriguez",
              "Martinez", "Hernandez", "Wilson", "Anderson", "Thomas", "Taylor", "Moore", "Jackson", "Martin",
              "Lee", "Perez", "Thompson", "White", "Harris", "Sanchez", "Clark", "Ramirez", "Lewis", "Robinson",
              "Walker", "Young", "Allen", "King", "Wright", "Scott", "Torres", "Nguyen", "Hill", "Flores",
              "Green", "Adams", "Nelson", "Baker", "Hall", "Rivera", "Campbell", "Mitchell", "Carter", "Patel",
              "Kim", "Chen"]
EMAIL_DOMAINS = ["gmail.com", "yahoo.com", "outlook.com", "hotmail.com", "icloud.com", "proton.me"]
# (city, region, postcode prefix)
CITIES = [("Austin", "Texas", "787"), ("Seattle", "Washington", "981"), ("Denver", "Colorado", "802"),
          ("Boston", "Massachusetts", "021"), ("Chicago", "Illinois", "606"), ("Portland", "Oregon", "972"),
          ("Miami", "Florida", "331"), ("Phoenix", "Arizona", "850"), ("Atlanta", "Georgia", "303"),
          ("San Diego", "California", "921"), ("New York", "New York", "100"), ("Nashville", "Tennessee", "372"),
          ("Columbus", "Ohio", "432"), ("Minneapolis", "Minnesota", "554"), ("Pittsburgh", "Pennsylvania", "152")]
STREETS = ["Oak St", "Maple Ave", "Cedar Ln", "Pine Rd", "Elm St", "Lakeview Dr", "Sunset Blvd", "Hillcrest Ave",
           "River Rd", "Park Pl", "Main St", "Washington Ave", "Highland Dr", "Meadow Ln"]

REVIEW_TITLES = {
    5: ["Love it!", "Exceeded my expectations", "Best purchase this year", "Five stars", "Perfect"],
    4: ["Very good", "Solid choice", "Happy with it", "Works well", "Good value"],
    3: ["It's okay", "Average", "Does the job", "Mixed feelings", "Decent for the price"],
    2: ["Disappointed", "Not great", "Could be better", "Meh", "Expected more"],
    1: ["Terrible", "Broke after a week", "Do not buy", "Waste of money", "Returned it"],
}
REVIEW_BODIES = {
    5: ["Quality is outstanding and it arrived quickly.", "I use it every day and it still looks new.",
        "Exactly as described, would buy again."],
    4: ["Works as expected, only minor issues with the packaging.", "Good quality for the price.",
        "Does what it promises; instructions could be clearer."],
    3: ["Fine for occasional use but nothing special.", "Some parts feel cheap, others are good.",
        "It works, but I expected a bit more."],
    2: ["Stopped working properly after a month.", "The size was not what the listing suggested.",
        "Quality control seems poor."],
    1: ["Arrived damaged and customer service did not help.", "Completely stopped working after two days.",
        "Nothing like the pictures."],
}
